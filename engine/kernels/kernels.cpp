#include "engine/kernels/kernels.hpp"

#include "engine/kernels/parallel.hpp"

#include "engine/error.hpp"
#include "engine/kernels/formats.hpp"
#include "engine/kernels/functions.hpp"
#include "engine/numerics/activation.hpp"
#include "engine/numerics/attention.hpp"
#include "engine/numerics/elementwise.hpp"
#include "engine/numerics/gated_deltanet.hpp"
#include "engine/numerics/half.hpp"
#include "engine/numerics/matvec.hpp"
#include "engine/numerics/norms.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace cardsim::kernels {
namespace {

float f32(double v) {
    return static_cast<float>(v);
}

/// The bytes of sequence `s` of a per-sequence store of `rows` sequences.
template <class Byte>
std::span<Byte> of_sequence(std::span<Byte> all, std::size_t rows, std::size_t s) {
    std::size_t stride = rows ? all.size() / rows : 0;
    return all.subspan(s * stride, stride);
}

std::size_t rows_of(std::size_t size, std::size_t width) {
    return width ? size / width : 0;
}

/// NeoX rotate-half of one head in place.
void rotate_head(std::span<float> h, std::size_t rotary_dim, double theta, double pos) {
    const std::size_t half = rotary_dim / 2;
    for (std::size_t i = 0; i < half; ++i) {
        double angle = double(
            static_cast<float>(pos * double(numerics::inverse_frequency(int(i), int(rotary_dim), theta))));
        double c = cos(angle), s = sin(angle);
        double x1 = h[i], x2 = h[i + half];
        h[i] = f32(x1 * c - x2 * s);
        h[i + half] = f32(x2 * c + x1 * s);
    }
}

float read_state(std::span<const std::byte> s, std::size_t i, numerics::StateFormat f) {
    if (f == numerics::StateFormat::F16) {
        numerics::F16 h;
        std::memcpy(&h, s.data() + 2 * i, 2);
        return numerics::to_f32(h);
    }
    float v;
    std::memcpy(&v, s.data() + 4 * i, 4);
    return v;
}

void write_state(std::span<std::byte> s, std::size_t i, double v, numerics::StateFormat f) {
    if (f == numerics::StateFormat::F16) {
        auto h = numerics::f16_from_double(v);
        std::memcpy(s.data() + 2 * i, &h, 2);
        return;
    }
    float x = f32(v);
    std::memcpy(s.data() + 4 * i, &x, 4);
}

/// Softmax-weighted sum: `out = Σ_j softmax(scores)_j · value_j`, with an extra logit `sink` in the
/// denominator when given; scores and weights in double.
void weighted(std::span<const double> scores, const std::vector<std::vector<float>>& vals, std::size_t dim,
              const double* sink, std::span<float> out) {
    double m = sink ? *sink : -std::numeric_limits<double>::infinity();
    for (double s : scores)
        m = std::max(m, s);
    double sum = sink ? exp(*sink - m) : 0.0;
    std::vector<double> acc(dim, 0.0);
    for (std::size_t j = 0; j < scores.size(); ++j) {
        double e = exp(scores[j] - m);
        sum += e;
        for (std::size_t d = 0; d < dim; ++d)
            acc[d] += e * vals[j][d];
    }
    for (std::size_t d = 0; d < dim; ++d)
        out[d] = f32(acc[d] / sum);
}

} // namespace

void embed(const numerics::MatrixView& table, std::span<const std::uint32_t> ids, std::span<float> out) {
    const std::size_t width = table.layout().cols;
    for (std::size_t r = 0; r < ids.size() && (r + 1) * width <= out.size(); ++r) {
        if (ids[r] >= table.layout().rows)
            throw Error(fmt::format("embed: token id {} of row {} is past the table's {} rows", ids[r], r,
                                    table.layout().rows));
        auto row = table.dequantize_row(ids[r]);
        std::copy(row.begin(), row.end(), out.begin() + r * width);
    }
}

void rms_norm(std::span<const float> x, std::span<const float> w, std::size_t group, double eps,
              bool zero_centred, std::span<float> out) {
    // The numerics contract's RMSNorm (window sum of squares, f32 operations); no weight is ones.
    const std::vector<float> ones(w.empty() ? group : 0, 1.0f);
    const std::size_t n = x.size() / group * group;
    numerics::rms_norm(
        x.first(n), w.empty() ? std::span<const float>(ones) : w.first(group), static_cast<float>(eps),
        zero_centred && !w.empty() ? numerics::NormWeight::ZeroCentred : numerics::NormWeight::Plain,
        out.first(n));
}

void layer_norm(std::span<const float> x, std::span<const float> w, std::span<const float> b,
                std::size_t width, double eps, std::span<float> out) {
    // The numerics contract's LayerNorm, row by row.
    for (std::size_t r0 = 0; r0 + width <= x.size(); r0 += width)
        numerics::layer_norm(x.subspan(r0, width), w.first(width), b.empty() ? b : b.first(width),
                             static_cast<float>(eps), out.subspan(r0, width));
}

void matvec(const numerics::MatrixView& w, std::span<const float> x, const numerics::Scheme& scheme,
            MatvecEpilogue epilogue, std::span<float> out) {
    const std::size_t n = w.layout().rows, k = w.layout().cols;
    std::vector<float> y(n);
    for (std::size_t r = 0; r < rows_of(x.size(), k); ++r) {
        const auto a = numerics::prepare(
            numerics::quantize(x.subspan(r * k, k), scheme, w.layout().format.group), w.layout());
        // Output rows are independent: split them over the host's cores (at least 64 K MACs each).
        parallel_for(n, std::max<std::size_t>(1, (std::size_t{1} << 16) / std::max<std::size_t>(k, 1)),
                     [&](std::size_t begin, std::size_t end) {
                         numerics::matvec(w, a, std::span<float>(y).subspan(begin, end - begin), begin);
                     });
        auto o = out.subspan(r * n, n);
        for (std::size_t i = 0; i < n; ++i) {
            switch (epilogue) {
            case MatvecEpilogue::None:
                o[i] = y[i];
                break;
            case MatvecEpilogue::Accumulate:
                o[i] = o[i] + y[i];
                break;
            case MatvecEpilogue::Gelu:
                o[i] = f32(gelu(y[i]));
                break;
            case MatvecEpilogue::Relu:
                o[i] = y[i] > 0 ? y[i] : 0.0f;
                break;
            }
        }
    }
}

void rotate(std::span<float> x, std::size_t width, std::size_t head_dim, std::size_t rotary_dim, double theta,
            std::span<const std::uint32_t> positions) {
    for (std::size_t r = 0; r < rows_of(x.size(), width); ++r)
        for (std::size_t h = 0; h < width / head_dim; ++h)
            rotate_head(x.subspan(r * width + h * head_dim, head_dim), rotary_dim, theta, positions[r]);
}

void cache_append(std::span<const float> x, std::size_t kv_heads, std::size_t head_dim,
                  std::size_t max_positions, numerics::CacheFormat f,
                  std::span<const std::uint32_t> positions, std::span<std::byte> cache) {
    const std::size_t width = kv_heads * head_dim, rows = rows_of(x.size(), width),
                      row_bytes = cache_row_bytes(f, head_dim);
    for (std::size_t r = 0; r < rows; ++r) {
        if (positions[r] >= max_positions)
            throw Error(
                fmt::format("cache append: position {} of sequence {} is past the cache's {} positions",
                            positions[r], r, max_positions));
        auto seq = of_sequence(cache, rows, r);
        for (std::size_t h = 0; h < kv_heads; ++h)
            encode_cache_row(f, x.subspan(r * width + h * head_dim, head_dim),
                             seq.subspan((h * max_positions + positions[r]) * row_bytes, row_bytes));
    }
}

void attend(std::span<const float> q, std::size_t heads, std::size_t kv_heads, std::size_t head_dim,
            std::size_t max_positions, std::size_t window, double scale, double softcap,
            std::span<const float> sinks, numerics::CacheFormat f, numerics::AttentionMath math,
            const numerics::Scheme& query_scheme, std::span<const std::uint32_t> positions,
            std::span<const std::byte> keys, std::span<const std::byte> values, std::span<float> out) {
    if (softcap > 0 || !sinks.empty())
        throw Error("attend: the attention unit takes no soft cap and no sinks");
    const std::size_t width = heads * head_dim, rows = rows_of(q.size(), width), group = heads / kv_heads;
    const std::size_t row_bytes = cache_row_bytes(f, head_dim);
    for (std::size_t r = 0; r < rows; ++r) {
        std::size_t last = positions[r], first = window && last + 1 > window ? last + 1 - window : 0;
        if (last >= max_positions) throw Error(fmt::format("attend: position {} is past the cache", last));
        auto ks = of_sequence(keys, rows, r), vs = of_sequence(values, rows, r);
        const std::size_t n = last - first + 1;
        // Heads are independent: split them over the host's cores when each holds enough work.
        parallel_for(
            heads, std::max<std::size_t>(1, 4096 / (n * head_dim)), [&](std::size_t h0, std::size_t h1) {
                for (std::size_t h = h0; h < h1; ++h) {
                    std::size_t kvh = h / group, at = (kvh * max_positions + first) * row_bytes;
                    numerics::CacheView view{keep_of(f), head_dim, n, ks.subspan(at, n * row_bytes),
                                             vs.subspan(at, n * row_bytes)};
                    auto qh = q.subspan(r * width + h * head_dim, head_dim);
                    auto oh = out.subspan(r * width + h * head_dim, head_dim);
                    if (math == numerics::AttentionMath::Array)
                        numerics::attend_array(qh, view, static_cast<float>(scale), query_scheme, oh);
                    else
                        numerics::attend_vector(qh, view, static_cast<float>(scale), oh);
                }
            });
    }
}

void self_attention(std::span<const float> qkv, std::size_t heads, std::size_t head_dim, std::size_t window,
                    std::span<const std::uint32_t> seq_starts, std::span<float> out) {
    const std::size_t width = heads * head_dim, fused = 3 * width;
    const double scale = 1.0 / std::sqrt(double(head_dim));
    for (std::size_t s = 0; s + 1 < seq_starts.size(); ++s) {
        std::size_t begin = seq_starts[s], end = seq_starts[s + 1];
        for (std::size_t t = begin; t < end; ++t)
            for (std::size_t h = 0; h < heads; ++h) {
                auto qh = qkv.subspan(t * fused + h * head_dim, head_dim);
                std::vector<double> scores;
                std::vector<std::vector<float>> vals;
                for (std::size_t j = begin; j < end; ++j) {
                    std::size_t dist = j > t ? j - t : t - j;
                    if (window && dist > window) continue;
                    auto kh = qkv.subspan(j * fused + width + h * head_dim, head_dim);
                    double sc = 0;
                    for (std::size_t d = 0; d < head_dim; ++d)
                        sc += double(qh[d]) * double(kh[d]);
                    scores.push_back(sc * scale);
                    auto vh = qkv.subspan(j * fused + 2 * width + h * head_dim, head_dim);
                    vals.emplace_back(vh.begin(), vh.end());
                }
                weighted(scores, vals, head_dim, nullptr, out.subspan(t * width + h * head_dim, head_dim));
            }
    }
}

void conv(std::span<const float> x, std::span<const float> w, std::size_t channels, std::size_t kernel,
          bool silu_after, std::span<std::byte> window, std::span<float> out) {
    const std::size_t rows = rows_of(x.size(), channels), keep = kernel - 1;
    for (std::size_t r = 0; r < rows; ++r) {
        auto win = of_sequence(window, rows, r);
        std::vector<float> past(keep * channels);
        if (!past.empty()) std::memcpy(past.data(), win.data(), 4 * past.size());
        for (std::size_t c = 0; c < channels; ++c) {
            double acc = 0;
            for (std::size_t j = 0; j < kernel; ++j) {
                double in = j < keep ? double(past[j * channels + c]) : double(x[r * channels + c]);
                acc += double(w[c * kernel + j]) * in;
            }
            float v = f32(acc);
            out[r * channels + c] = silu_after ? f32(silu(v)) : v;
        }
        // Shift the window: drop the oldest input, append this row.
        if (keep) {
            std::vector<float> next(keep * channels);
            for (std::size_t j = 0; j + 1 < keep; ++j)
                std::copy_n(past.begin() + (j + 1) * channels, channels, next.begin() + j * channels);
            std::copy_n(x.begin() + r * channels, channels, next.begin() + (keep - 1) * channels);
            std::memcpy(win.data(), next.data(), 4 * next.size());
        }
    }
}

void silu(std::span<const float> x, std::span<float> out) {
    for (std::size_t i = 0; i < x.size(); ++i)
        out[i] = f32(kernels::silu(x[i]));
}

void l2_norm(std::span<const float> x, std::size_t group, double eps, double scale, std::span<float> out) {
    // The numerics contract's L2 norm, then the model's scale as one f32 multiply.
    const std::size_t n = x.size() / group * group;
    numerics::l2_norm(x.first(n), group, static_cast<float>(eps), out.first(n));
    if (scale != 1.0)
        for (std::size_t i = 0; i < n; ++i)
            out[i] = out[i] * static_cast<float>(scale);
}

void gates(std::span<const float> b, std::span<const float> a, std::span<const float> a_log,
           std::span<const float> dt_bias, std::span<float> beta, std::span<float> g) {
    // The numerics contract's gates, one row of value heads at a time.
    const std::size_t heads = a_log.size();
    for (std::size_t r0 = 0; r0 + heads <= b.size(); r0 += heads)
        numerics::gdn_gates(a.subspan(r0, heads), b.subspan(r0, heads), a_log, dt_bias.first(heads),
                            beta.subspan(r0, heads), g.subspan(r0, heads));
}

// Off the numerics contract for now: double sums in loop order, rounded once (the contract's
// numerics::delta_rule_step, with window sums, makes a 0.1B full run about a quarter slower).
void delta_step(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                std::span<const float> beta, std::span<const float> g, std::size_t key_heads,
                std::size_t value_heads, std::size_t dk, std::size_t dv, numerics::StateFormat sf,
                std::span<std::byte> state, std::span<float> out) {
    const std::size_t rows = rows_of(v.size(), value_heads * dv), group = value_heads / key_heads;
    const std::size_t elem = state_element_bytes(sf);
    for (std::size_t r = 0; r < rows; ++r) {
        auto seq = of_sequence(state, rows, r);
        // Value heads are independent: split them over the host's cores.
        parallel_for(value_heads, 1, [&](std::size_t h0, std::size_t h1) {
            std::vector<double> S(dk * dv), delta(dv);
            for (std::size_t h = h0; h < h1; ++h) {
                auto sh = seq.subspan(h * dk * dv * elem, dk * dv * elem);
                std::size_t kh = h / group;
                auto qh = q.subspan((r * key_heads + kh) * dk, dk),
                     khv = k.subspan((r * key_heads + kh) * dk, dk);
                auto vh = v.subspan((r * value_heads + h) * dv, dv);
                double decay = exp(g[r * value_heads + h]), b = beta[r * value_heads + h];
                for (std::size_t i = 0; i < dk * dv; ++i)
                    S[i] = double(read_state(sh, i, sf)) * decay;
                for (std::size_t j = 0; j < dv; ++j) {
                    double sk = 0;
                    for (std::size_t i = 0; i < dk; ++i)
                        sk += S[i * dv + j] * double(khv[i]);
                    delta[j] = b * (double(vh[j]) - sk);
                }
                for (std::size_t i = 0; i < dk; ++i)
                    for (std::size_t j = 0; j < dv; ++j)
                        write_state(sh, i * dv + j, S[i * dv + j] + double(khv[i]) * delta[j], sf);
                for (std::size_t j = 0; j < dv; ++j) {
                    double o = 0;
                    for (std::size_t i = 0; i < dk; ++i)
                        o += double(read_state(sh, i * dv + j, sf)) * double(qh[i]);
                    out[(r * value_heads + h) * dv + j] = f32(o);
                }
            }
        });
    }
}

void gated_norm(std::span<const float> x, std::span<const float> z, std::span<const float> w,
                std::size_t group, double eps, std::span<float> out) {
    // The numerics contract's SiLU-gated RMSNorm.
    const std::size_t n = x.size() / group * group;
    numerics::gated_rms_norm(x.first(n), z.first(n), w.first(group), static_cast<float>(eps), out.first(n));
}

void sigmoid_gate(std::span<const float> x, std::span<const float> gate, std::span<float> out) {
    numerics::sigmoid_gate(x, gate.first(x.size()), out.first(x.size()));
}

void silu_mul(std::span<const float> gate, std::span<const float> up, std::span<float> out) {
    numerics::silu_mul(gate, up.first(gate.size()), out.first(gate.size()));
}

void add(std::span<const float> a, std::span<const float> b, std::span<float> out) {
    numerics::add(a, b.first(a.size()), out.first(a.size()));
}

void argmax(std::span<const float> x, std::size_t width, std::span<float> out) {
    // The numerics contract's arg-max: the lowest index of the largest value (the first NaN wins).
    for (std::size_t r = 0; r < rows_of(x.size(), width); ++r)
        out[r] = static_cast<float>(numerics::argmax(x.subspan(r * width, width)));
}

void gelu(std::span<const float> x, std::span<float> out) {
    for (std::size_t i = 0; i < x.size(); ++i)
        out[i] = f32(kernels::gelu(x[i]));
}

void geglu(std::span<const float> x, std::size_t n, std::span<float> out) {
    for (std::size_t r = 0; r < rows_of(x.size(), 2 * n); ++r)
        for (std::size_t i = 0; i < n; ++i)
            out[r * n + i] = f32(kernels::gelu(x[r * 2 * n + i]) * double(x[r * 2 * n + n + i]));
}

void rope(std::span<float> qkv, std::size_t heads, std::size_t head_dim, double theta,
          std::span<const std::uint32_t> positions) {
    const std::size_t fused = 3 * heads * head_dim;
    for (std::size_t r = 0; r < rows_of(qkv.size(), fused); ++r)
        for (std::size_t h = 0; h < 2 * heads; ++h) // the q heads, then the k heads
            rotate_head(qkv.subspan(r * fused + h * head_dim, head_dim), head_dim, theta, positions[r]);
}

void add_type(std::span<float> h, std::span<const float> table, std::size_t width,
              std::span<const std::uint32_t> qtype, std::span<const std::uint32_t> seq_starts) {
    for (std::size_t s = 0; s + 1 < seq_starts.size() && s < qtype.size(); ++s) {
        if ((qtype[s] + 1) * width > table.size())
            throw Error(fmt::format("add_type: type {} of sequence {} is past the table", qtype[s], s));
        for (std::size_t t = seq_starts[s]; t < seq_starts[s + 1]; ++t)
            for (std::size_t i = 0; i < width; ++i)
                h[t * width + i] = h[t * width + i] + table[qtype[s] * width + i];
    }
}

void gather_markers(std::span<const float> h, std::size_t width, std::span<const std::uint32_t> marker_rows,
                    std::span<float> out) {
    for (std::size_t m = 0; m < marker_rows.size(); ++m) {
        if ((marker_rows[m] + 1) * width > h.size())
            throw Error(
                fmt::format("gather_markers: marker {} names row {}, past the rows", m, marker_rows[m]));
        std::copy_n(h.begin() + marker_rows[m] * width, width, out.begin() + m * width);
    }
}

void act_features(std::span<const float> h, std::size_t width, std::span<const float> logits,
                  std::span<const std::uint32_t> seq_starts, std::span<const std::uint32_t> marker_starts,
                  std::span<float> out) {
    const std::size_t w = width + 4;
    for (std::size_t s = 0; s + 1 < seq_starts.size() && s + 1 < marker_starts.size(); ++s) {
        std::copy_n(h.begin() + seq_starts[s] * width, width, out.begin() + s * w);
        std::size_t m0 = marker_starts[s], m1 = marker_starts[s + 1], k = m1 - m0;
        std::vector<double> p;
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        for (std::size_t m = m0; m < m1; ++m)
            mx = std::max(mx, double(logits[m]));
        for (std::size_t m = m0; m < m1; ++m)
            p.push_back(exp(double(logits[m]) - mx)), sum += p.back();
        for (auto& v : p)
            v /= sum;
        std::vector<double> sorted = p;
        std::sort(sorted.rbegin(), sorted.rend());
        double top1 = k ? sorted[0] : 0, top2 = k > 1 ? sorted[1] : 0, entropy = 0;
        for (double v : p)
            if (v > 0) entropy -= v * log(v);
        auto o = out.subspan(s * w + width, 4);
        o[0] = f32(top1);
        o[1] = f32(top1 - top2);
        o[2] = f32(k > 1 ? entropy / log(double(k)) : 0.0);
        o[3] = f32(double(k) / 255.0);
    }
}

} // namespace cardsim::kernels
