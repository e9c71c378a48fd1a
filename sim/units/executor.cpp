#include "sim/units/executor.hpp"

#include "engine/error.hpp"
#include "engine/kernels/formats.hpp"
#include "engine/kernels/kernels.hpp"

#include <fmt/core.h>

#include <cstring>

namespace cardsim::sim {
namespace {

using program::Command;
using program::Opcode;
namespace flag = program::flag;

/// An operand's bytes as f32 (operands are f32-aligned in card memory and in copies).
std::span<float> f32s(std::span<std::byte> b) {
    return {reinterpret_cast<float*>(b.data()), b.size() / 4};
}
/// An operand's bytes as u32.
std::span<const std::uint32_t> u32s(std::span<std::byte> b) {
    return {reinterpret_cast<const std::uint32_t*>(b.data()), b.size() / 4};
}
double param(const Command& c, std::size_t i) {
    return program::bits_f64(c.params.at(i));
}

/// The packed matrix of `rows_or_zero` rows (0: as many as the bytes hold) and `cols` columns.
numerics::MatrixView matrix(const card::CardConfig& cfg, std::span<const std::byte> bytes, std::size_t rows,
                            std::size_t cols) {
    if (rows == 0) {
        auto one = kernels::matrix_layout(cfg, 1, cols);
        rows = bytes.size() / one.row_stride();
    }
    return numerics::MatrixView(kernels::matrix_layout(cfg, rows, cols), bytes, "a weight operand");
}

void run(const card::CardConfig& cfg, const Command& c, std::span<const std::span<std::byte>> o) {
    auto d = [&](std::size_t i) { return static_cast<std::size_t>(c.dims.at(i)); };
    const auto cache = cfg.numerics.cache;
    switch (c.opcode) {
    case Opcode::Copy:
        std::memcpy(o[1].data(), o[0].data(), std::min(o[0].size(), o[1].size()));
        return;
    case Opcode::Embed:
        kernels::embed(matrix(cfg, o[0], 0, d(1)), u32s(o[1]).first(d(0)), f32s(o[2]));
        return;
    case Opcode::RmsNorm:
        kernels::rms_norm(f32s(o[0]), f32s(o[1]), d(2), param(c, 0), c.flags & flag::ZeroCentred, f32s(o[2]));
        return;
    case Opcode::LayerNorm:
        kernels::layer_norm(f32s(o[0]), f32s(o[1]), f32s(o[2]), d(1), param(c, 0), f32s(o[3]));
        return;
    case Opcode::Matvec: {
        const std::size_t rows = d(0), n = d(1), k = d(2), n1 = d(3), n2 = d(4);
        auto ep = c.flags & flag::Accumulate     ? kernels::MatvecEpilogue::Accumulate
                  : c.flags & flag::EpilogueGelu ? kernels::MatvecEpilogue::Gelu
                  : c.flags & flag::EpilogueRelu ? kernels::MatvecEpilogue::Relu
                                                 : kernels::MatvecEpilogue::None;
        auto w = matrix(cfg, o[1], n, k);
        auto scheme = kernels::activation_scheme(cfg.numerics);
        if (n1 == n) {
            kernels::matvec(w, f32s(o[0]), scheme, ep, f32s(o[3]));
        } else {
            std::vector<float> y(rows * n);
            kernels::matvec(w, f32s(o[0]), scheme, ep, y);
            auto out1 = f32s(o[3]), out2 = f32s(o[4]), out3 = f32s(o[5]);
            const std::size_t n3 = n - n1 - n2;
            for (std::size_t r = 0; r < rows; ++r) {
                std::copy_n(y.begin() + r * n, n1, out1.begin() + r * n1);
                if (n2) std::copy_n(y.begin() + r * n + n1, n2, out2.begin() + r * n2);
                if (n3) std::copy_n(y.begin() + r * n + n1 + n2, n3, out3.begin() + r * n3);
            }
        }
        if (!o[2].empty()) { // bias (cards whose matvec adds one)
            auto out = f32s(o[3]);
            auto b = f32s(o[2]);
            for (std::size_t r = 0; r < rows; ++r)
                for (std::size_t i = 0; i < n1; ++i)
                    out[r * n1 + i] += b[i];
        }
        return;
    }
    case Opcode::Rotate:
        kernels::rotate(f32s(o[0]), d(1) * d(2), d(2), d(3), param(c, 0), u32s(o[1]).first(d(0)));
        return;
    case Opcode::Rope:
        kernels::rope(f32s(o[0]), d(1), d(2), param(c, 0), u32s(o[1]).first(d(0)));
        return;
    case Opcode::CacheAppend:
        kernels::cache_append(f32s(o[0]), d(1), d(2), d(3), cache, u32s(o[1]).first(d(0)), o[2]);
        return;
    case Opcode::Attend:
        kernels::attend(f32s(o[0]), d(1), d(2), d(3), d(4), d(5), param(c, 0), param(c, 1), f32s(o[4]), cache,
                        cfg.numerics.attention, kernels::attention_query_scheme(cfg.numerics),
                        u32s(o[1]).first(d(0)), o[2], o[3], f32s(o[5]));
        return;
    case Opcode::SelfAttention:
        kernels::self_attention(f32s(o[0]), d(2), d(3), d(4), u32s(o[1]).first(d(1) + 1), f32s(o[2]));
        return;
    case Opcode::Conv:
        kernels::conv(f32s(o[0]), f32s(o[1]), d(1), d(2), c.flags & flag::FusedSilu, o[2], f32s(o[3]));
        return;
    case Opcode::Silu:
        kernels::silu(f32s(o[0]), f32s(o[1]));
        return;
    case Opcode::L2Norm:
        kernels::l2_norm(f32s(o[0]), d(2), param(c, 0), param(c, 1), f32s(o[1]));
        return;
    case Opcode::Gates:
        kernels::gates(f32s(o[0]), f32s(o[1]), f32s(o[2]), f32s(o[3]), f32s(o[4]), f32s(o[5]));
        return;
    case Opcode::DeltaStep:
        kernels::delta_step(f32s(o[0]), f32s(o[1]), f32s(o[2]), f32s(o[3]), f32s(o[4]), d(1), d(2), d(3),
                            d(4), cfg.numerics.state, o[5], f32s(o[6]));
        return;
    case Opcode::GatedNorm:
        kernels::gated_norm(f32s(o[0]), f32s(o[1]), f32s(o[2]), d(2), param(c, 0), f32s(o[3]));
        return;
    case Opcode::SigmoidGate:
        kernels::sigmoid_gate(f32s(o[0]), f32s(o[1]), f32s(o[2]));
        return;
    case Opcode::SiluMul:
        kernels::silu_mul(f32s(o[0]), f32s(o[1]), f32s(o[2]));
        return;
    case Opcode::Add:
        kernels::add(f32s(o[0]), f32s(o[1]), f32s(o[2]));
        return;
    case Opcode::ArgMax:
        kernels::argmax(f32s(o[0]), d(1), f32s(o[1]));
        return;
    case Opcode::Gelu:
        kernels::gelu(f32s(o[0]), f32s(o[1]));
        return;
    case Opcode::GeGlu:
        kernels::geglu(f32s(o[0]), d(1), f32s(o[1]));
        return;
    case Opcode::AddType:
        kernels::add_type(f32s(o[0]), f32s(o[1]), d(2), u32s(o[2]).first(d(1)), u32s(o[3]).first(d(1) + 1));
        return;
    case Opcode::GatherMarkers:
        kernels::gather_markers(f32s(o[0]), d(1), u32s(o[1]).first(d(0)), f32s(o[2]));
        return;
    case Opcode::ActFeatures:
        kernels::act_features(f32s(o[0]), d(2), f32s(o[1]), u32s(o[2]).first(d(0) + 1),
                              u32s(o[3]).first(d(0) + 1), f32s(o[4]));
        return;
    }
}

} // namespace

Execute make_executor(const card::CardConfig& config) {
    kernels::weight_format(config);
    return [config](const Command& c, std::span<const std::span<std::byte>> operands) {
        run(config, c, operands);
    };
}

} // namespace cardsim::sim
