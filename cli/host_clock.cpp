#include "cli/host_clock.hpp"

#include <chrono>

namespace cardsim::cli {
namespace {

/// The time cardsim started: set during static initialisation, before main runs.
const auto process_start = std::chrono::steady_clock::now();

} // namespace

double process_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - process_start).count();
}

Stopwatch::Stopwatch() : last_(process_seconds()) {}

double Stopwatch::lap() {
    const double now = process_seconds(), since = now - last_;
    last_ = now;
    return since;
}

} // namespace cardsim::cli
