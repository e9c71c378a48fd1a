#include "sim/memory/time_base.hpp"

namespace cardsim::sim::memory {

TimeBase::TimeBase(const MemoryClock& clock)
    : clock_(clock),
      resolution_fs_(static_cast<std::uint64_t>(sc_core::sc_get_time_resolution().to_seconds() * 1e15 + 0.5)),
      by_resolution_(resolution_fs_) {}

} // namespace cardsim::sim::memory
