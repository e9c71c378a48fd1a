#include "sim/memory/latency_histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace cardsim::sim::memory {

std::uint64_t LatencyHistogram::lower_bound(std::uint32_t i) {
    if (i < sub) return i;
    const std::uint32_t shift = (i - sub) / sub;
    const std::uint64_t top = sub + (i - sub) % sub;
    return top << shift;
}

void LatencyHistogram::merge(const LatencyHistogram& o) {
    for (std::size_t i = 0; i < buckets_.size(); ++i)
        buckets_[i] += o.buckets_[i];
    count_ += o.count_;
    sum_ += o.sum_;
    max_ = std::max(max_, o.max_);
    min_ = std::min(min_, o.min_);
}

std::uint64_t LatencyHistogram::percentile(double q) const {
    if (count_ == 0) return 0;
    const auto rank =
        static_cast<std::uint64_t>(std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(count_)));
    std::uint64_t seen = 0;
    for (std::uint32_t i = 0; i < buckets_.size(); ++i) {
        seen += buckets_[i];
        if (seen >= std::max<std::uint64_t>(rank, 1)) return lower_bound(i);
    }
    return max_;
}

} // namespace cardsim::sim::memory
