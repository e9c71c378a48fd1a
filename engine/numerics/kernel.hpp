#pragma once
// Which of two equal implementations the numerics' fast paths take: AVX2 where the CPU has it, or
// portable C++. Both give the same bits; tests force each.

namespace cardsim::numerics {

/// The fast paths' kernel: the AVX2 one where the CPU has it (Best), else portable C++.
enum class Kernel { Best, Portable };
/// Sets the kernel for this process (tests use it to hold both to the spec); not for use while
/// another thread runs a kernel.
void use_kernel(Kernel k);
/// Whether the fast paths take AVX2 now: the CPU has it and Kernel::Best is set.
bool use_avx2();

} // namespace cardsim::numerics
