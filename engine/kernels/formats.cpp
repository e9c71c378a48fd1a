#include "engine/kernels/formats.hpp"

#include "engine/error.hpp"
#include "engine/numerics/half.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace cardsim::kernels {

numerics::WeightFormat weight_format(const card::CardConfig& c) {
    if (c.weights.group_size)
        throw Error(
            fmt::format("weights.group_size = {}: the matvec sums each output's whole row exactly, so the "
                        "only group size is `row`",
                        *c.weights.group_size));
    numerics::WeightFormat f;
    f.codes = c.weights.code_bits == 4 ? numerics::CodeFormat::Int4 : numerics::CodeFormat::Int8;
    f.scale =
        c.weights.scale == card::ScaleKind::F16 ? numerics::ScaleFormat::F16 : numerics::ScaleFormat::E8M0;
    f.group = c.weights.block_size;
    return f;
}

numerics::Scheme activation_scheme(const numerics::EngineNumerics& n) {
    numerics::Scheme s;
    if (n.scaling == numerics::ActScaling::Sub32) {
        s.block = numerics::Values{numerics::ACT_BLOCK};
        s.scale = numerics::LeastPowerOfTwo{numerics::NARROW_BITS};
    } else {
        s.block = numerics::OfTheWeights{};
        s.scale = numerics::LeastPowerOfTwo{numerics::WIDE_BITS};
    }
    s.words = n.activations == numerics::Words::Two ? 2 : 1;
    return s;
}

numerics::MatrixLayout matrix_layout(const card::CardConfig& c, std::size_t rows, std::size_t cols) {
    return numerics::matrix_layout(rows, cols, weight_format(c), c.ddr.burst_bytes());
}

std::size_t cache_row_bytes(numerics::CacheFormat f, std::size_t head_dim) {
    return f == numerics::CacheFormat::F16 ? 2 * head_dim : head_dim + 4;
}

void hadamard(std::span<double> x) {
    const std::size_t n = x.size();
    for (std::size_t h = 1; h < n; h *= 2)
        for (std::size_t i = 0; i < n; i += 2 * h)
            for (std::size_t j = i; j < i + h; ++j) {
                double a = x[j], b = x[j + h];
                x[j] = a + b;
                x[j + h] = a - b;
            }
    const double norm = 1.0 / std::sqrt(double(n));
    for (auto& v : x)
        v *= norm;
}

namespace {

void need_power_of_two(std::size_t n) {
    if (n == 0 || (n & (n - 1)))
        throw Error(fmt::format("an int8_hadamard cache needs a power-of-two head dim, not {}", n));
}

} // namespace

void encode_cache_row(numerics::CacheFormat f, std::span<const float> row, std::span<std::byte> out) {
    if (f == numerics::CacheFormat::F16) {
        for (std::size_t i = 0; i < row.size(); ++i) {
            auto h = numerics::to_f16(row[i]);
            std::memcpy(out.data() + 2 * i, &h, 2);
        }
        return;
    }
    std::vector<float> x(row.begin(), row.end());
    if (f == numerics::CacheFormat::Int8Hadamard) {
        need_power_of_two(x.size());
        std::vector<double> d(x.begin(), x.end());
        hadamard(d);
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] = static_cast<float>(d[i]);
    }
    float amax = 0;
    for (float v : x)
        amax = std::max(amax, std::fabs(v));
    float scale = amax / 127.0f;
    std::memcpy(out.data(), &scale, 4);
    for (std::size_t i = 0; i < x.size(); ++i) {
        float q = scale > 0 ? std::nearbyint(x[i] / scale) : 0.0f; // round half even (default mode)
        q = std::clamp(q, -127.0f, 127.0f);
        out[4 + i] = std::byte(static_cast<std::uint8_t>(static_cast<std::int8_t>(q)));
    }
}

void decode_cache_row(numerics::CacheFormat f, std::span<const std::byte> bytes, std::span<float> out) {
    if (f == numerics::CacheFormat::F16) {
        for (std::size_t i = 0; i < out.size(); ++i) {
            numerics::F16 h;
            std::memcpy(&h, bytes.data() + 2 * i, 2);
            out[i] = numerics::to_f32(h);
        }
        return;
    }
    float scale;
    std::memcpy(&scale, bytes.data(), 4);
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = float(static_cast<std::int8_t>(std::to_integer<std::uint8_t>(bytes[4 + i]))) * scale;
    if (f == numerics::CacheFormat::Int8Hadamard) {
        need_power_of_two(out.size());
        std::vector<double> d(out.begin(), out.end());
        hadamard(d);
        for (std::size_t i = 0; i < out.size(); ++i)
            out[i] = static_cast<float>(d[i]);
    }
}

std::size_t state_element_bytes(numerics::StateFormat f) {
    return f == numerics::StateFormat::F16 ? 2 : 4;
}

} // namespace cardsim::kernels
