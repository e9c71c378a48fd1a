#pragma once
// The testbench side of rtl/matvec.sv: drives one Verilated model of it clock by clock through its
// valid/ready ports (a command, the activation row's codes and exponents, the rows' scales and code
// bytes as the DDR image holds them, bias and prior outputs) and collects its f32 results and the
// cycles it took. Included only where Verilator built the model (sim/rtl/CMakeLists.txt).

#include "engine/error.hpp"
#include "engine/numerics/activation.hpp"
#include "engine/numerics/weights.hpp"

#include <fmt/core.h>
#include <verilated.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

namespace cardsim::sim::rtl {

/// The epilogue codes of the RTL's `cmd_epilogue` port.
enum class RtlEpilogue : std::uint8_t { None = 0, Relu = 1, Accumulate = 2, Gelu = 3 };

/// One token row's results from the RTL and the clock cycles from its command to its last result.
struct RtlRowResult {
    std::vector<float> y;
    std::uint64_t cycles = 0;
};

/// Sets bits [bit, bit + n) of a Verilated port (n <= 32) to the low n bits of `v`; the port's bits
/// there must be zero.
template <class P>
void put_bits(P& port, unsigned bit, unsigned n, std::uint32_t v) {
    const std::uint64_t value = n == 32 ? v : v & ((std::uint64_t{1} << n) - 1);
    if constexpr (std::is_integral_v<P>) {
        port = static_cast<P>(port | static_cast<P>(value << bit));
    } else {
        const unsigned word = bit / 32, low = bit % 32;
        port.at(word) |= static_cast<std::uint32_t>(value << low);
        if (low + n > 32) port.at(word + 1) |= static_cast<std::uint32_t>(value >> (32 - low));
    }
}

/// Zeroes a Verilated port.
template <class P>
void clear(P& port) {
    if constexpr (std::is_integral_v<P>)
        port = 0;
    else
        std::memset(port.data(), 0, sizeof(port));
}

/// A Verilated rtl/matvec.sv (class `Model`, built with `width` codes a beat and room for
/// `max_chunks` chunks a row), reset once, then driven one activation row at a time.
template <class Model>
class MatvecDriver {
public:
    MatvecDriver(unsigned width, unsigned max_chunks)
        : context_(std::make_unique<VerilatedContext>()), model_(std::make_unique<Model>(context_.get())),
          width_(width), max_chunks_(max_chunks) {
        model_->rst_n = 0;
        model_->clk = 0;
        model_->eval();
        model_->clk = 1;
        model_->eval();
        model_->clk = 0;
        model_->rst_n = 1;
        model_->eval();
    }
    ~MatvecDriver() { model_->final(); }
    MatvecDriver(const MatvecDriver&) = delete;
    MatvecDriver& operator=(const MatvecDriver&) = delete;

    /// Codes the RTL takes a beat.
    unsigned width() const { return width_; }

    /// Every row of `m` times the quantised row `q`, then `bias` (empty: none) and the epilogue
    /// (`prior`: the outputs an Accumulate adds to). Throws cardsim::Error when the shape does not fit
    /// the RTL or the RTL stops answering.
    RtlRowResult run(const numerics::MatrixView& m, const numerics::QuantizedActivation& q,
                     RtlEpilogue epilogue, std::span<const float> bias, std::span<const float> prior) {
        const auto& l = m.layout();
        const std::size_t chunks = l.padded_cols() / numerics::DOT_BLOCK,
                          beats = numerics::DOT_BLOCK / width_;
        const std::size_t group_chunks = l.format.group / numerics::DOT_BLOCK, groups = l.groups();
        const std::size_t rows = l.rows;
        if (chunks > max_chunks_)
            throw Error(fmt::format("the RTL matvec holds rows of up to {} columns; this matrix has {}",
                                    max_chunks_ * numerics::DOT_BLOCK, l.cols));
        if (rows == 0 || chunks == 0) return {};
        const bool int4 = l.format.codes == numerics::CodeFormat::Int4;
        const bool f16 = l.format.scale == numerics::ScaleFormat::F16;
        const std::size_t beat_bytes = int4 ? width_ / 2 : width_;
        bool nonfinite = false;
        for (std::size_t b = 0; b < q.blocks(); ++b)
            nonfinite = nonfinite || q.nonfinite(b);
        auto code = [&](int w, std::size_t j) -> std::int32_t {
            return w < q.words && j < q.length ? q.code(w, j) : 0;
        };
        auto exponent = [&](int w, std::size_t chunk) -> std::int32_t {
            const std::size_t first = chunk * numerics::DOT_BLOCK;
            return w < q.words && first < q.length ? q.exponent(w, first / q.block) : 0;
        };

        Model& v = *model_;
        RtlRowResult out;
        out.y.reserve(rows);
        std::size_t cmd = 0, a = 0, s = 0, w = 0, p = 0;
        const std::size_t a_beats = chunks * beats, s_beats = rows * groups, w_beats = rows * chunks * beats;
        const std::uint64_t limit = 64 + 8 * (a_beats + w_beats + rows * (chunks + 8));
        while (out.y.size() < rows) {
            v.cmd_valid = cmd == 0;
            v.cmd_chunks = static_cast<std::uint16_t>(chunks);
            v.cmd_group_chunks = static_cast<std::uint16_t>(group_chunks);
            v.cmd_rows = static_cast<std::uint32_t>(rows);
            v.cmd_two_words = q.words == 2;
            v.cmd_int4 = int4;
            v.cmd_f16 = f16;
            v.cmd_epilogue = static_cast<std::uint8_t>(epilogue);
            v.cmd_bias = !bias.empty();
            v.a_valid = a < a_beats;
            if (a < a_beats) {
                const std::size_t chunk = a / beats,
                                  first = chunk * numerics::DOT_BLOCK + (a % beats) * width_;
                clear(v.a_code0);
                clear(v.a_code1);
                for (unsigned i = 0; i < width_; ++i) {
                    put_bits(v.a_code0, 24 * i, 24, static_cast<std::uint32_t>(code(0, first + i)));
                    put_bits(v.a_code1, 24 * i, 24, static_cast<std::uint32_t>(code(1, first + i)));
                }
                v.a_exp0 = static_cast<std::uint16_t>(exponent(0, chunk));
                v.a_exp1 = static_cast<std::uint16_t>(exponent(1, chunk));
                v.a_nonfinite = nonfinite;
            }
            v.s_valid = s < s_beats;
            if (s < s_beats) {
                const auto scales = m.scales(s / groups);
                const std::size_t g = s % groups;
                v.s_data = f16 ? static_cast<std::uint16_t>(std::to_integer<unsigned>(scales[2 * g]) |
                                                            std::to_integer<unsigned>(scales[2 * g + 1]) << 8)
                               : static_cast<std::uint16_t>(std::to_integer<unsigned>(scales[g]));
            }
            v.w_valid = w < w_beats;
            if (w < w_beats) {
                const auto codes = m.codes(w / (chunks * beats));
                const std::size_t at = (w % (chunks * beats)) * beat_bytes;
                clear(v.w_data);
                for (std::size_t i = 0; i < beat_bytes; ++i)
                    put_bits(v.w_data, 8 * static_cast<unsigned>(i), 8,
                             std::to_integer<std::uint32_t>(codes[at + i]));
            }
            v.p_valid = p < rows;
            if (p < rows) {
                v.p_bias = bias.empty() ? 0u : std::bit_cast<std::uint32_t>(bias[p]);
                v.p_prior = prior.empty() ? 0u : std::bit_cast<std::uint32_t>(prior[p]);
            }
            v.y_ready = 1;
            v.clk = 0;
            v.eval();
            // The handshakes of this cycle, sampled before the rising edge.
            const bool fire_cmd = v.cmd_valid && v.cmd_ready, fire_a = v.a_valid && v.a_ready;
            const bool fire_s = v.s_valid && v.s_ready, fire_w = v.w_valid && v.w_ready;
            const bool fire_p = v.p_valid && v.p_ready, fire_y = v.y_valid && v.y_ready;
            const std::uint32_t y = v.y_data;
            v.clk = 1;
            v.eval();
            ++out.cycles;
            cmd += fire_cmd, a += fire_a, s += fire_s, w += fire_w, p += fire_p;
            if (fire_y) out.y.push_back(std::bit_cast<float>(y));
            if (out.cycles > limit)
                throw Error(fmt::format("the RTL matvec stopped answering after {} cycles ({} of {} results)",
                                        out.cycles, out.y.size(), rows));
        }
        return out;
    }

private:
    std::unique_ptr<VerilatedContext> context_;
    std::unique_ptr<Model> model_;
    unsigned width_, max_chunks_;
};

} // namespace cardsim::sim::rtl
