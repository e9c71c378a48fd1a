#include "engine/kernels/formats.hpp"

#include "engine/error.hpp"
#include "engine/numerics/contract.hpp"
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

numerics::Keep keep_of(numerics::CacheFormat f) {
    switch (f) {
    case numerics::CacheFormat::F16:
        return numerics::Keep::F16;
    case numerics::CacheFormat::Int8:
        return numerics::Keep::Int8Rows;
    case numerics::CacheFormat::Int8Hadamard:
        return numerics::Keep::Int8RowsRotated;
    }
    return numerics::Keep::F16;
}

std::size_t cache_row_bytes(numerics::CacheFormat f, std::size_t head_dim) {
    return numerics::kept_bytes(keep_of(f), head_dim);
}

void encode_cache_row(numerics::CacheFormat f, std::span<const float> row, std::span<std::byte> out) {
    numerics::keep_row(row, keep_of(f), out);
}

numerics::Scheme attention_query_scheme(const numerics::EngineNumerics& n) {
    auto c = numerics::contract(n);
    if (c.attention)
        if (auto* q = std::get_if<numerics::Quantized>(&c.attention->queries)) return q->scheme;
    return activation_scheme(n);
}

numerics::Keep state_keep(numerics::StateFormat f) {
    return f == numerics::StateFormat::F16 ? numerics::Keep::F16 : numerics::Keep::F32;
}

std::size_t state_element_bytes(numerics::StateFormat f) {
    return numerics::kept_bytes(state_keep(f), 1);
}

} // namespace cardsim::kernels
