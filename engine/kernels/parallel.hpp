#pragma once
// Work split over the host's cores: the kernels' independent rows and heads.

#include <cstddef>
#include <functional>

namespace cardsim::kernels {

/// Calls `body(begin, end)` on disjoint ranges covering [0, n), on the host's worker threads and
/// the calling thread, and returns when all are done (rethrowing the first exception a range
/// threw). Ranges hold at least `grain` items; work under two grains runs on the caller alone. The
/// ranges never change what a kernel computes — every item is computed alone, as it would be in
/// one range — so results are identical for any thread count. A call from inside a range runs
/// serially. The pool starts on first use with `host_threads()` threads, and again in a forked
/// child (which inherits no threads).
void parallel_for(std::size_t n, std::size_t grain,
                  const std::function<void(std::size_t, std::size_t)>& body);

/// Threads `parallel_for` uses, the caller included: as set, else the environment's
/// CARDSIM_HOST_THREADS (a positive integer), else the host's cores.
std::size_t host_threads();
/// Sets the thread count (1: every kernel runs on the caller); takes effect at the next call.
void set_host_threads(std::size_t threads);

} // namespace cardsim::kernels
