// The kernels' split over host threads: it covers every item once, passes errors on, survives a
// fork, and never changes a bit of what the kernels compute.

#include "engine/kernels/kernels.hpp"
#include "engine/kernels/parallel.hpp"
#include "engine/numerics/activation.hpp"
#include "engine/numerics/scheme.hpp"
#include "engine/numerics/weights.hpp"
#include "tests/support/in_child.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

using namespace cardsim;

namespace {

/// Restores the host's default thread count when a test ends.
struct ThreadsScope {
    explicit ThreadsScope(std::size_t n) { kernels::set_host_threads(n); }
    ~ThreadsScope() { kernels::set_host_threads(0); }
};

/// Bit patterns of `v`.
std::vector<std::uint32_t> bits(const std::vector<float>& v) {
    std::vector<std::uint32_t> b(v.size());
    std::memcpy(b.data(), v.data(), 4 * v.size());
    return b;
}

} // namespace

TEST_CASE("parallel_for covers every item exactly once, in ranges of at least the grain") {
    ThreadsScope threads(4);
    for (std::size_t n : {0u, 1u, 7u, 100u, 10007u}) {
        std::vector<std::atomic<int>> seen(n);
        std::atomic<std::size_t> smallest{n};
        kernels::parallel_for(n, 10, [&](std::size_t begin, std::size_t end) {
            REQUIRE(begin < end);
            std::size_t len = end - begin, cur = smallest.load();
            while (len < cur && !smallest.compare_exchange_weak(cur, len)) {
            }
            for (std::size_t i = begin; i < end; ++i)
                ++seen[i];
        });
        for (std::size_t i = 0; i < n; ++i)
            REQUIRE(seen[i] == 1);
        if (n >= 20) CHECK(smallest.load() >= 10);
    }
}

TEST_CASE("an exception thrown in a range reaches the caller, and the pool keeps working") {
    ThreadsScope threads(2);
    CHECK_THROWS_WITH(kernels::parallel_for(1000, 1,
                                            [](std::size_t begin, std::size_t) {
                                                if (begin > 0) throw std::runtime_error("range failed");
                                            }),
                      "range failed");
    std::atomic<std::size_t> sum{0};
    kernels::parallel_for(1000, 1, [&](std::size_t b, std::size_t e) { sum += e - b; });
    CHECK(sum == 1000);
}

TEST_CASE("a forked child runs parallel work although it inherits no threads") {
    ThreadsScope threads(2);
    std::atomic<std::size_t> warm{0};
    kernels::parallel_for(100, 1, [&](std::size_t b, std::size_t e) { warm += e - b; });
    REQUIRE(warm == 100);
    auto got = test::in_child([] {
        std::atomic<std::size_t> sum{0};
        kernels::parallel_for(5000, 1, [&](std::size_t b, std::size_t e) { sum += e - b; });
        return std::vector<std::uint64_t>{sum.load()};
    });
    CHECK(got == std::vector<std::uint64_t>{5000});
}

TEST_CASE("the matvec gives the same bits on one thread and on several") {
    std::mt19937_64 rng(5);
    std::normal_distribution<float> dist(0, 1);
    const std::size_t rows = 1500, cols = 512;
    std::vector<float> w(rows * cols), x(2 * cols);
    for (auto& v : w)
        v = dist(rng);
    for (auto& v : x)
        v = dist(rng);
    const numerics::WeightFormat f{};
    const auto m = numerics::quantize_matrix(w, cols, f);
    const numerics::Scheme scheme{numerics::Values{32}, numerics::LeastPowerOfTwo{7}, 1};
    std::vector<float> one(2 * rows), many(2 * rows);
    {
        ThreadsScope threads(1);
        kernels::matvec(m.view(), x, scheme, graph::Epilogue::None, {}, one);
    }
    {
        ThreadsScope threads(3);
        kernels::matvec(m.view(), x, scheme, graph::Epilogue::None, {}, many);
    }
    CHECK(bits(one) == bits(many));
}
