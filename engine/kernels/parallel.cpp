#include "engine/kernels/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <unistd.h>

namespace cardsim::kernels {
namespace {

std::atomic<std::size_t> wanted_threads{0}; ///< 0: the host's cores
thread_local bool inside_range = false;

/// Worker threads taking ranges of the current job. A job is published in one atomic word
/// (generation, chunk count, next chunk), so a worker claims a chunk with one compare-and-swap and
/// can never claim one of a job that is not current. Workers spin for a short while after a job
/// (kernels come in quick succession in a full run, and waking a sleeping thread costs more than a
/// small kernel), then sleep until the next one.
class Pool {
public:
    explicit Pool(std::size_t workers) {
        for (std::size_t i = 0; i < workers; ++i)
            threads_.emplace_back([this] { work(); });
    }
    ~Pool() {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        for (auto& t : threads_)
            t.join();
    }
    std::size_t workers() const { return threads_.size(); }

    /// Runs `chunks` ranges of the job; the caller takes ranges too.
    void run(std::size_t n, std::size_t chunks, const std::function<void(std::size_t, std::size_t)>& body) {
        body_ = &body;
        n_ = n;
        error_ = nullptr;
        pending_.store(chunks, std::memory_order_relaxed);
        const std::uint64_t generation = ((state_.load(std::memory_order_relaxed) >> 40) + 1) & 0xFFFFFF;
        state_.store(generation << 40 | std::uint64_t{chunks} << 20, std::memory_order_release);
        {
            std::lock_guard lock(mutex_);
            if (sleepers_ > 0) wake_.notify_all();
        }
        take_ranges(generation);
        // The last ranges are the workers': spin a while (they are usually about to finish), then
        // sleep until the last one wakes the caller (a host with more threads than cores would
        // otherwise spend it yielding).
        for (std::uint32_t spins = 0;; ++spins) {
            const std::size_t left = pending_.load(std::memory_order_acquire);
            if (left == 0) break;
            if (spins > 4096) pending_.wait(left, std::memory_order_acquire);
        }
        std::exception_ptr error;
        {
            std::lock_guard lock(mutex_);
            error = error_;
        }
        if (error) std::rethrow_exception(error);
    }

private:
    static std::uint64_t generation_of(std::uint64_t state) { return state >> 40; }

    void work() {
        std::uint64_t seen = 0;
        for (;;) {
            // Spin a while for the next job, then sleep.
            const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
            std::uint32_t spins = 0;
            while (generation_of(state_.load(std::memory_order_acquire)) == seen) {
                if ((++spins & 63) == 0 && std::chrono::steady_clock::now() > until) break;
            }
            if (generation_of(state_.load(std::memory_order_acquire)) == seen) {
                std::unique_lock lock(mutex_);
                ++sleepers_;
                wake_.wait(lock, [&] {
                    return stop_ || generation_of(state_.load(std::memory_order_acquire)) != seen;
                });
                --sleepers_;
                if (stop_) return;
            }
            seen = generation_of(state_.load(std::memory_order_acquire));
            take_ranges(seen);
        }
    }

    /// Takes ranges of job `generation` until none is left (or the job is no longer current).
    void take_ranges(std::uint64_t generation) {
        for (;;) {
            std::uint64_t s = state_.load(std::memory_order_acquire);
            const std::uint64_t chunks = (s >> 20) & 0xFFFFF, next = s & 0xFFFFF;
            if (generation_of(s) != generation || next >= chunks) return;
            if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) continue;
            const std::size_t begin = n_ * next / chunks, end = n_ * (next + 1) / chunks;
            inside_range = true;
            try {
                (*body_)(begin, end);
            } catch (...) {
                std::lock_guard lock(mutex_);
                if (!error_) error_ = std::current_exception();
            }
            inside_range = false;
            if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_all();
        }
    }

    std::vector<std::thread> threads_;
    std::atomic<std::uint64_t> state_{0}; ///< generation (24 bits) | chunks (20) | next chunk (20)
    std::atomic<std::size_t> pending_{0}; ///< chunks of the current job not yet done
    const std::function<void(std::size_t, std::size_t)>* body_ = nullptr; ///< valid while pending
    std::size_t n_ = 0;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::exception_ptr error_;
    std::uint32_t sleepers_ = 0;
    bool stop_ = false;
};

/// The process's pool, made anew in a forked child and when the thread count changes. A pool
/// inherited through fork has no threads in the child: it is abandoned (leaked), never touched.
/// Held by the caller of `run` through `busy`: one job at a time; a second caller runs serially.
struct Current {
    std::unique_ptr<Pool> pool;
    pid_t owner = 0;
    std::mutex busy;
};

Current& current() {
    static Current c;
    return c;
}

Pool& pool_of(Current& c, std::size_t workers) {
    if (c.pool && c.owner != ::getpid()) (void)c.pool.release(); // its threads are gone
    if (c.pool && c.pool->workers() != workers) c.pool.reset();
    if (!c.pool) {
        c.pool = std::make_unique<Pool>(workers);
        c.owner = ::getpid();
    }
    return *c.pool;
}

} // namespace

std::size_t host_threads() {
    if (const std::size_t w = wanted_threads.load()) return w;
    static const std::size_t from_environment = [] {
        const char* v = std::getenv("CARDSIM_HOST_THREADS");
        char* end = nullptr;
        const unsigned long n = v ? std::strtoul(v, &end, 10) : 0;
        return v && end && *end == '\0' && n > 0 && n <= 1024 ? static_cast<std::size_t>(n) : std::size_t{0};
    }();
    return from_environment ? from_environment : std::max(1u, std::thread::hardware_concurrency());
}

void set_host_threads(std::size_t threads) {
    wanted_threads.store(threads);
}

void parallel_for(std::size_t n, std::size_t grain,
                  const std::function<void(std::size_t, std::size_t)>& body) {
    const std::size_t threads = host_threads();
    grain = std::max<std::size_t>(grain, 1);
    const std::size_t chunks = std::min(threads, n / grain);
    auto& c = current();
    std::unique_lock lock(c.busy, std::try_to_lock);
    if (chunks < 2 || inside_range || !lock.owns_lock()) {
        if (n) body(0, n);
        return;
    }
    pool_of(c, threads - 1).run(n, chunks, body);
}

} // namespace cardsim::kernels
