// Host memory committed up front: zeros, writable, movable, and committing keeps what was written.

#include "engine/kernels/host_memory.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <utility>

using cardsim::kernels::HostMemory;

TEST_CASE("host memory starts as zeros and takes writes", "[kernels]") {
    const std::uint64_t n = (std::uint64_t{5} << 20) + 12345; // two huge pages and a part of one
    HostMemory m(n);
    REQUIRE(m.bytes().size() == n);
    std::uint64_t nonzero = 0;
    for (auto b : m.bytes())
        nonzero += b != std::byte{0};
    CHECK(nonzero == 0);
    m.bytes()[0] = std::byte{1};
    m.bytes()[n - 1] = std::byte{2};
    CHECK(m.bytes()[0] == std::byte{1});
    CHECK(m.bytes()[n - 1] == std::byte{2});
}

TEST_CASE("a moved host memory leaves its source empty and keeps its bytes", "[kernels]") {
    HostMemory a(100000);
    a.bytes()[99999] = std::byte{7};
    HostMemory b(std::move(a));
    CHECK(a.bytes().empty());
    REQUIRE(b.bytes().size() == 100000);
    CHECK(b.bytes()[99999] == std::byte{7});
    HostMemory c;
    c = std::move(b);
    CHECK(b.bytes().empty());
    CHECK(c.bytes()[99999] == std::byte{7});
    CHECK(HostMemory(0).bytes().empty());
}

TEST_CASE("committing pages keeps the bytes already written", "[kernels]") {
    HostMemory m(std::uint64_t{6} << 20);
    auto bytes = m.bytes();
    for (std::size_t i = 0; i < bytes.size(); i += 4093)
        bytes[i] = std::byte(i % 251 + 1);
    cardsim::kernels::prepare_pages(bytes.data() + 3, bytes.size() - 5); // unaligned at both ends
    for (std::size_t i = 0; i < bytes.size(); ++i)
        REQUIRE(bytes[i] == (i % 4093 == 0 ? std::byte(i % 251 + 1) : std::byte{0}));
}
