#include "sim/memory/channel_controller.hpp"

namespace cardsim::sim::memory {

ChannelController::ChannelController(const card::DdrConfig& ddr)
    : core_(ddr), buffer_(ddr.geometry.banks(), 0, 0), scheduler_(make_scheduler(ddr, buffer_)) {}

Cycle ChannelController::access(Direction direction, std::uint64_t address, std::uint64_t length,
                                Cycle arrival) {
    return core_.access(direction, address, length, arrival);
}

Cycle ChannelController::flush() {
    return core_.flush();
}

void ChannelController::reset(Cycle origin) {
    buffer_.clear();
    core_.reset(origin);
}

} // namespace cardsim::sim::memory
