#pragma once
// A fixed-size histogram of latencies (in memory-clock cycles) for means and percentiles.

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace cardsim::sim::memory {

/// Log-linear histogram: exact below 64, then 64 buckets per power of two (relative error below
/// 1.6 %), up to 2^40. Fixed size: adding a sample never allocates. The mean is exact.
class LatencyHistogram {
public:
    /// Records one latency.
    void add(std::uint64_t v) {
        ++buckets_[index(v)];
        ++count_;
        sum_ += v;
        if (v > max_) max_ = v;
        if (v < min_) min_ = v;
    }
    /// Adds another histogram's samples to this one.
    void merge(const LatencyHistogram& other);
    std::uint64_t count() const { return count_; }
    double mean() const { return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0.0; }
    std::uint64_t max() const { return max_; }
    std::uint64_t min() const { return count_ ? min_ : 0; }
    /// The value below which a fraction `q` (0..1) of the samples fall, as the lower bound of its
    /// bucket (exact below 64); 0 when empty.
    std::uint64_t percentile(double q) const;

private:
    static constexpr std::uint32_t sub_bits = 6;
    static constexpr std::uint32_t sub = 1u << sub_bits;
    static constexpr std::uint32_t max_shift = 34;
    /// The bucket of `v` (inline: one per completed request).
    static std::uint32_t index(std::uint64_t v) {
        if (v < sub) return static_cast<std::uint32_t>(v);
        const std::uint32_t msb = 63 - static_cast<std::uint32_t>(std::countl_zero(v));
        const std::uint32_t shift = std::min(msb - sub_bits, max_shift);
        const std::uint64_t top = std::min<std::uint64_t>(v >> shift, 2 * sub - 1);
        return sub + shift * sub + static_cast<std::uint32_t>(top - sub);
    }
    static std::uint64_t lower_bound(std::uint32_t index);
    std::array<std::uint64_t, sub + (max_shift + 1) * sub> buckets_{};
    std::uint64_t count_ = 0;
    std::uint64_t sum_ = 0;
    std::uint64_t max_ = 0;
    std::uint64_t min_ = ~std::uint64_t{0};
};

} // namespace cardsim::sim::memory
