#include "engine/numerics/kernel.hpp"

#include <atomic>

namespace cardsim::numerics {
namespace {

std::atomic<Kernel> selected{Kernel::Best};

} // namespace

void use_kernel(Kernel k) {
    selected.store(k, std::memory_order_relaxed);
}

bool use_avx2() {
    static const bool has = __builtin_cpu_supports("avx2");
    return has && selected.load(std::memory_order_relaxed) == Kernel::Best;
}

} // namespace cardsim::numerics
