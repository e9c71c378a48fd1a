#include "sim/memory/sparse_store.hpp"

#include <algorithm>
#include <cstring>

namespace cardsim::sim::memory {

SparseStore::SparseStore(std::uint64_t capacity)
    : capacity_(capacity), pages_((capacity + page_bytes - 1) / page_bytes) {}

void SparseStore::read(std::uint64_t address, std::span<std::byte> out) const {
    std::uint64_t done = 0;
    while (done < out.size()) {
        const std::uint64_t a = address + done;
        const std::uint64_t in_page = a % page_bytes;
        const std::uint64_t n = std::min<std::uint64_t>(page_bytes - in_page, out.size() - done);
        const Page& p = pages_[a / page_bytes];
        if (p)
            std::memcpy(out.data() + done, p.get() + in_page, n);
        else
            std::memset(out.data() + done, 0, n);
        done += n;
    }
}

void SparseStore::write(std::uint64_t address, std::span<const std::byte> in) {
    std::uint64_t done = 0;
    while (done < in.size()) {
        const std::uint64_t a = address + done;
        const std::uint64_t in_page = a % page_bytes;
        const std::uint64_t n = std::min<std::uint64_t>(page_bytes - in_page, in.size() - done);
        Page& p = pages_[a / page_bytes];
        if (!p) {
            p = std::make_unique<std::byte[]>(page_bytes); // value-initialised: zeros
            ++allocated_;
        }
        std::memcpy(p.get() + in_page, in.data() + done, n);
        done += n;
    }
}

void SparseStore::clear() {
    for (auto& p : pages_)
        p.reset();
    allocated_ = 0;
}

} // namespace cardsim::sim::memory
