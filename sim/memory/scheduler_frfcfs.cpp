#include "sim/memory/scheduler_frfcfs.hpp"

#include <algorithm>

namespace cardsim::sim::memory {

SchedulerFrFcfs::SchedulerFrFcfs(RequestBuffer& buffer, std::uint32_t starvation_limit,
                                 std::uint32_t high_watermark, std::uint32_t low_watermark,
                                 std::uint32_t stagger_horizon)
    : buffer_(buffer), limit_(starvation_limit), high_(std::max<std::uint32_t>(high_watermark, 1)),
      low_(std::min(low_watermark, high_ - 1)), stagger_(stagger_horizon > 0),
      horizon_(std::min(stagger_horizon, max_urgency - 1)) {}

bool SchedulerFrFcfs::has_further_row_hit(std::uint32_t bank, std::uint32_t row, Direction direction,
                                          std::int32_t except) const {
    for (const std::int32_t i : buffer_.in_bank(bank))
        if (i != except && buffer_[i].direction == direction && buffer_[i].row == row) return true;
    return false;
}

} // namespace cardsim::sim::memory
