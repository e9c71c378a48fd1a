#include "sim/memory/time_base.hpp"

#include <cstdio>

namespace cardsim::sim::memory {

TimeBase::TimeBase(const MemoryClock& clock)
    : clock_(clock),
      resolution_fs_(static_cast<std::uint64_t>(sc_core::sc_get_time_resolution().to_seconds() * 1e15 + 0.5)),
      by_resolution_(resolution_fs_) {}

} // namespace cardsim::sim::memory

/// Debian's libsystemc.so carries a `main` that calls `sc_main`, so every program linking it
/// needs the symbol even though cardsim's programs have their own main and start SystemC from it.
/// This weak definition (in the object every DDR module pulls in) satisfies the link; a program
/// that defines its own sc_main overrides it.
__attribute__((weak)) int sc_main(int, char*[]) {
    std::fputs("cardsim: sc_main is not an entry point of this program\n", stderr);
    return 2;
}
