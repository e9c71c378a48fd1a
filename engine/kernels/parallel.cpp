#include "engine/kernels/parallel.hpp"

#include <algorithm>
#include <atomic>
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

/// Worker threads waiting for ranges of the current job.
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
        std::unique_lock lock(mutex_);
        body_ = &body;
        n_ = n;
        chunks_ = chunks;
        next_ = 0;
        pending_ = chunks;
        error_ = nullptr;
        ++generation_;
        lock.unlock();
        wake_.notify_all();
        take_ranges();
        lock.lock();
        done_.wait(lock, [&] { return pending_ == 0; });
        body_ = nullptr;
        if (error_) std::rethrow_exception(error_);
    }

private:
    void work() {
        std::uint64_t seen = 0;
        for (;;) {
            {
                std::unique_lock lock(mutex_);
                wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
                if (stop_) return;
                seen = generation_;
            }
            take_ranges();
        }
    }
    /// Takes ranges of the current job until none is left.
    void take_ranges() {
        for (;;) {
            std::size_t chunk;
            const std::function<void(std::size_t, std::size_t)>* body;
            {
                std::lock_guard lock(mutex_);
                if (!body_ || next_ == chunks_) return;
                chunk = next_++;
                body = body_;
            }
            const std::size_t begin = n_ * chunk / chunks_, end = n_ * (chunk + 1) / chunks_;
            std::exception_ptr error;
            inside_range = true;
            try {
                (*body)(begin, end);
            } catch (...) {
                error = std::current_exception();
            }
            inside_range = false;
            std::lock_guard lock(mutex_);
            if (error && !error_) error_ = error;
            if (--pending_ == 0) done_.notify_all();
        }
    }

    std::vector<std::thread> threads_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    const std::function<void(std::size_t, std::size_t)>* body_ = nullptr;
    std::size_t n_ = 0, chunks_ = 0, next_ = 0, pending_ = 0;
    std::uint64_t generation_ = 0;
    std::exception_ptr error_;
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
