#include "models/graph_eval.hpp"

#include "engine/error.hpp"
#include "engine/overload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cardsim::models {
namespace {

using namespace graph;

double sigmoid(double x) {
    return 1.0 / (1.0 + std::exp(-x));
}
double silu(double x) {
    return x * sigmoid(x);
}
double softplus(double x) {
    return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}
double gelu(double x) {
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

double gelu_tanh(double x) {
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::acos(-1.0)) * (x + 0.044715 * x * x * x)));
}

/// The rotation of `x[0 .. rd)` by position `pos`: pairs (i, i + rd/2) (NeoX) or (2i, 2i + 1)
/// (`interleaved`) at angle pos · theta^(−2i/rd).
void rotate(double* x, std::size_t rd, std::size_t pos, double theta, bool interleaved = false) {
    const std::size_t half = rd / 2;
    for (std::size_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(pos) * std::pow(theta, -2.0 * static_cast<double>(i) / rd);
        const double c = std::cos(angle), s = std::sin(angle);
        const std::size_t i0 = interleaved ? 2 * i : i, i1 = interleaved ? 2 * i + 1 : i + half;
        const double a = x[i0], b = x[i1];
        x[i0] = a * c - b * s;
        x[i1] = b * c + a * s;
    }
}

/// Softmax of `x` in place.
void softmax(std::vector<double>& x) {
    if (x.empty()) return;
    const double m = *std::max_element(x.begin(), x.end());
    double sum = 0;
    for (auto& v : x)
        sum += (v = std::exp(v - m));
    for (auto& v : x)
        v /= sum;
}

} // namespace

GraphEvaluator::GraphEvaluator(const BuiltGraph& graph, const graph::WeightSource& weights)
    : graph_(graph), weights_(weights) {}

const std::vector<double>& GraphEvaluator::constant(const Weight& w) {
    auto key = std::make_pair(w.tensor, describe(w.view));
    auto it = constants_.find(key);
    if (it == constants_.end()) {
        std::vector<double> v(weights_.view_of(w.tensor, w.view).numel());
        weights_.read_f64(w.tensor, w.view, v);
        it = constants_.emplace(key, std::move(v)).first;
    }
    return it->second;
}

std::vector<double>& GraphEvaluator::state(const Batch& b, std::size_t token_row, StateId s) {
    return seqs_[b.seq_ids.at(b.token_seq.at(token_row))].states.at(s.id);
}

std::size_t GraphEvaluator::length(std::size_t seq) const {
    auto it = seqs_.find(seq);
    return it == seqs_.end() ? 0 : it->second.length;
}

void GraphEvaluator::forget(std::size_t seq) {
    seqs_.erase(seq);
}

GraphEvaluator::Step GraphEvaluator::step(std::span<const DecodeRow> rows) {
    Batch b;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& r = rows[i];
        if (std::count_if(rows.begin(), rows.end(), [&](auto& o) { return o.seq == r.seq; }) > 1)
            throw Error(fmt::format("a decode step feeds sequence {} twice", r.seq));
        auto& s = seqs_[r.seq];
        if (s.states.empty()) {
            for (const auto& st : graph_.graph.states)
                s.states.push_back(std::visit(
                    Overload{
                        [](const ConvWindow& w) {
                            return std::vector<double>((w.kernel - 1) * w.channels, 0.0);
                        },
                        [](const DeltaState& d) { return std::vector<double>(d.heads * d.dk * d.dv, 0.0); },
                        [](const auto&) { return std::vector<double>{}; },
                    },
                    st));
        }
        b.tokens.push_back(r.token);
        b.token_seq.push_back(i);
        b.position.push_back(s.length);
        b.seq_ids.push_back(r.seq);
        b.first_row.push_back(i);
        b.qtype.push_back(0);
    }
    run(b);
    for (const auto& r : rows)
        ++seqs_[r.seq].length;
    Step out;
    if (graph_.graph.logits) out.logits = vals_[graph_.graph.logits->id];
    if (graph_.graph.next)
        for (double v : vals_[graph_.graph.next->id].data)
            out.next.push_back(static_cast<std::int64_t>(v));
    return out;
}

GraphEvaluator::Encoded GraphEvaluator::encode(std::span<const EncoderSequence> batch) {
    Batch b;
    for (std::size_t s = 0; s < batch.size(); ++s) {
        b.first_row.push_back(b.tokens.size());
        b.qtype.push_back(batch[s].question_type);
        b.seq_ids.push_back(s);
        for (auto m : batch[s].markers) {
            if (m >= batch[s].tokens.size())
                throw Error(fmt::format("sequence {}: marker at position {} past its {} tokens", s, m,
                                        batch[s].tokens.size()));
            b.marker_row.push_back(b.tokens.size() + m);
            b.marker_seq.push_back(s);
        }
        for (std::size_t p = 0; p < batch[s].tokens.size(); ++p) {
            b.tokens.push_back(batch[s].tokens[p]);
            b.token_seq.push_back(s);
            b.position.push_back(p);
        }
    }
    seqs_.clear();
    run(b);
    seqs_.clear();
    Encoded out;
    if (graph_.graph.logits) out.marker_logits = vals_[graph_.graph.logits->id];
    if (graph_.graph.act) out.act = vals_[graph_.graph.act->id];
    return out;
}

/// One op of a batch at a time: an `eval` overload per op, each that op's doc comment in double
/// (engine/graph/graph.hpp) over the values and the batch's sequence states.
struct GraphEvaluator::OpEval {
    GraphEvaluator& self;
    const Batch& b;

    /// The value `v` of this run.
    Matrix& V(Val v) { return self.vals_.at(v.id); }
    /// The constant `w` in double (read once per evaluator).
    const std::vector<double>& constant(const Weight& w) { return self.constant(w); }
    /// State `s` of the sequence of `token_row`.
    std::vector<double>& state(const Batch& batch, std::size_t token_row, StateId s) {
        return self.state(batch, token_row, s);
    }

    void eval(std::size_t index, const Embed& o);
    void eval(std::size_t index, const LayerNorm& o);
    void eval(std::size_t index, const Gemm& o);
    void eval(std::size_t index, const Rope& o);
    void eval(std::size_t index, const Attention& o);
    void eval(std::size_t index, const GeGlu& o);
    void eval(std::size_t index, const AddType& o);
    void eval(std::size_t index, const GatherMarkers& o);
    void eval(std::size_t index, const ActFeatures& o);
    void eval(std::size_t index, const RmsNorm& o);
    void eval(std::size_t index, const Rotate& o);
    void eval(std::size_t index, const CacheAppend& o);
    void eval(std::size_t index, const AttendCache& o);
    void eval(std::size_t index, const Conv& o);
    void eval(std::size_t index, const Silu& o);
    void eval(std::size_t index, const L2Norm& o);
    void eval(std::size_t index, const GdnGates& o);
    void eval(std::size_t index, const DeltaStep& o);
    void eval(std::size_t index, const GatedRmsNorm& o);
    void eval(std::size_t index, const SigmoidGate& o);
    void eval(std::size_t index, const SiluMul& o);
    void eval(std::size_t index, const Add& o);
    void eval(std::size_t index, const ArgMax& o);
    void eval(std::size_t index, const Gelu& o);
    void eval(std::size_t index, const Relu& o);
    void eval(std::size_t index, const Scale& o);
    void eval(std::size_t index, const Softcap& o);
    void eval(std::size_t index, const Moe& o);
    void eval(std::size_t index, const HeadMatmul& o);
    void eval(std::size_t index, const GeluMul& o);
    void eval(std::size_t index, const LatentAttendCache& o);
};

void GraphEvaluator::OpEval::eval(std::size_t, const Embed& o) {
    const auto& t = constant(o.table);
    Matrix& out = V(o.out);
    const std::size_t vocab = t.size() / out.cols;
    for (std::size_t r = 0; r < out.rows; ++r) {
        const auto id = b.tokens[r];
        if (id < 0 || static_cast<std::size_t>(id) >= vocab)
            throw Error(fmt::format("token {} is outside the vocabulary of {}", id, vocab));
        std::copy_n(t.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(id) * out.cols),
                    out.cols, out.data.begin() + static_cast<std::ptrdiff_t>(r * out.cols));
    }
}

void GraphEvaluator::OpEval::eval(std::size_t, const LayerNorm& o) {
    const auto& w = constant(o.w);
    const std::vector<double>* bias = o.b ? &constant(*o.b) : nullptr;
    const Matrix x = V(o.x);
    Matrix& out = V(o.out);
    for (std::size_t r = 0; r < x.rows; ++r) {
        auto row = x.row(r);
        const double n = static_cast<double>(row.size());
        const double mean = std::accumulate(row.begin(), row.end(), 0.0) / n;
        double var = 0;
        for (double v : row)
            var += (v - mean) * (v - mean);
        var /= n;
        const double inv = 1.0 / std::sqrt(var + o.eps);
        for (std::size_t c = 0; c < row.size(); ++c)
            out.data[r * out.cols + c] = (row[c] - mean) * inv * w[c] + (bias ? (*bias)[c] : 0.0);
    }
}

void GraphEvaluator::OpEval::eval(std::size_t index, const Gemm& o) {
    const auto& w = constant(o.w);
    const graph::ViewShape vs = self.weights_.view_of(o.w.tensor, o.w.view);
    const bool t = std::visit([](auto& v) { return v.transpose; }, o.w.view);
    const std::size_t n = t ? vs.rows : vs.row_len, k = t ? vs.row_len : vs.rows;
    const std::vector<double>* bias = o.b ? &constant(*o.b) : nullptr;
    const Matrix a = V(o.a);
    Matrix& out = V(o.out);
    if (a.cols != k || out.cols != n)
        throw std::logic_error(
            fmt::format("op {}: a Gemm of [{}, {}] from {} to {} wide", index, n, k, a.cols, out.cols));
    for (std::size_t r = 0; r < a.rows; ++r)
        for (std::size_t j = 0; j < n; ++j) {
            double s = 0;
            for (std::size_t i = 0; i < k; ++i)
                s += a.data[r * k + i] * (t ? w[j * k + i] : w[i * n + j]);
            if (bias) s += (*bias)[j];
            double& y = out.data[r * n + j];
            switch (o.epilogue) {
            case Epilogue::None:
                y = s;
                break;
            case Epilogue::Gelu:
                y = gelu(s);
                break;
            case Epilogue::Relu:
                y = std::max(0.0, s);
                break;
            case Epilogue::Accumulate:
                y += s;
                break;
            }
        }
}

void GraphEvaluator::OpEval::eval(std::size_t, const Rope& o) {
    Matrix& x = V(o.qkv);
    for (std::size_t r = 0; r < x.rows; ++r)
        for (std::size_t part = 0; part < 2; ++part)
            for (std::size_t h = 0; h < o.heads; ++h)
                rotate(&x.data[r * x.cols + (part * o.heads + h) * o.head_dim], o.head_dim, b.position[r],
                       o.theta);
}

void GraphEvaluator::OpEval::eval(std::size_t, const Attention& o) {
    const Matrix& x = V(o.qkv);
    Matrix& out = V(o.out);
    const std::size_t hd = o.head_dim, H = o.heads * hd;
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    for (std::size_t r = 0; r < x.rows; ++r) {
        std::vector<std::size_t> keys;
        for (std::size_t j = 0; j < x.rows; ++j) {
            if (b.token_seq[j] != b.token_seq[r]) continue;
            const std::size_t d =
                b.position[j] > b.position[r] ? b.position[j] - b.position[r] : b.position[r] - b.position[j];
            if (!o.window || d <= *o.window) keys.push_back(j);
        }
        for (std::size_t h = 0; h < o.heads; ++h) {
            std::vector<double> p;
            for (auto j : keys) {
                double s = 0;
                for (std::size_t i = 0; i < hd; ++i)
                    s += x.data[r * x.cols + h * hd + i] * x.data[j * x.cols + H + h * hd + i];
                p.push_back(s * scale);
            }
            softmax(p);
            for (std::size_t i = 0; i < hd; ++i) {
                double s = 0;
                for (std::size_t m = 0; m < keys.size(); ++m)
                    s += p[m] * x.data[keys[m] * x.cols + 2 * H + h * hd + i];
                out.data[r * out.cols + h * hd + i] = s;
            }
        }
    }
}

void GraphEvaluator::OpEval::eval(std::size_t, const GeGlu& o) {
    const Matrix& x = V(o.x);
    Matrix& out = V(o.out);
    for (std::size_t r = 0; r < out.rows; ++r)
        for (std::size_t c = 0; c < out.cols; ++c)
            out.data[r * out.cols + c] = gelu(x.data[r * x.cols + c]) * x.data[r * x.cols + out.cols + c];
}

void GraphEvaluator::OpEval::eval(std::size_t, const AddType& o) {
    const auto& t = constant(o.table);
    Matrix& h = V(o.h);
    const std::size_t types = t.size() / h.cols;
    for (std::size_t r = 0; r < h.rows; ++r) {
        const std::size_t q = b.qtype.at(b.token_seq[r]);
        if (q >= types) throw Error(fmt::format("question type {} is outside the table of {}", q, types));
        for (std::size_t c = 0; c < h.cols; ++c)
            h.data[r * h.cols + c] += t[q * h.cols + c];
    }
}

void GraphEvaluator::OpEval::eval(std::size_t, const GatherMarkers& o) {
    const Matrix& h = V(o.h);
    Matrix& out = V(o.out);
    for (std::size_t m = 0; m < out.rows; ++m)
        std::copy_n(h.row(b.marker_row[m]).begin(), h.cols,
                    out.data.begin() + static_cast<std::ptrdiff_t>(m * out.cols));
}

void GraphEvaluator::OpEval::eval(std::size_t, const ActFeatures& o) {
    const Matrix& h = V(o.h);
    const Matrix& l = V(o.logits);
    Matrix& out = V(o.out);
    for (std::size_t s = 0; s < out.rows; ++s) {
        std::vector<double> p;
        for (std::size_t m = 0; m < l.rows; ++m)
            if (b.marker_seq[m] == s) p.push_back(l.data[m]);
        const std::size_t k = p.size();
        softmax(p);
        std::vector<double> sorted = p;
        std::sort(sorted.rbegin(), sorted.rend());
        const double top1 = k > 0 ? sorted[0] : 0.0, top2 = k > 1 ? sorted[1] : 0.0;
        double entropy = 0;
        for (double v : p)
            if (v > 0) entropy -= v * std::log(v);
        double* row = &out.data[s * out.cols];
        std::copy_n(h.row(b.first_row[s]).begin(), h.cols, row);
        row[h.cols] = top1;
        row[h.cols + 1] = top1 - top2;
        row[h.cols + 2] = k > 1 ? entropy / std::log(static_cast<double>(k)) : 0.0;
        row[h.cols + 3] = static_cast<double>(k) / 255.0;
    }
}

void GraphEvaluator::OpEval::eval(std::size_t, const RmsNorm& o) {
    const std::vector<double>* w = o.w ? &constant(*o.w) : nullptr;
    const Matrix x = V(o.x);
    Matrix& out = V(o.out);
    for (std::size_t r = 0; r < x.rows; ++r)
        for (std::size_t g0 = 0; g0 < x.cols; g0 += o.group) {
            double ss = 0;
            for (std::size_t i = 0; i < o.group; ++i)
                ss += x.data[r * x.cols + g0 + i] * x.data[r * x.cols + g0 + i];
            const double inv = 1.0 / std::sqrt(ss / static_cast<double>(o.group) + o.eps);
            for (std::size_t i = 0; i < o.group; ++i) {
                const double scale = !w ? 1.0 : o.zero_centred ? 1.0 + (*w)[i] : (*w)[i];
                out.data[r * x.cols + g0 + i] = x.data[r * x.cols + g0 + i] * inv * scale;
            }
        }
}

void GraphEvaluator::OpEval::eval(std::size_t, const Rotate& o) {
    Matrix& x = V(o.x);
    for (std::size_t r = 0; r < x.rows; ++r)
        for (std::size_t h0 = 0; h0 < x.cols; h0 += o.head_dim)
            rotate(&x.data[r * x.cols + h0], o.rotary_dim, b.position[r], o.theta, o.interleaved);
}

void GraphEvaluator::OpEval::eval(std::size_t, const CacheAppend& o) {
    const Matrix& x = V(o.x);
    for (std::size_t r = 0; r < x.rows; ++r) {
        auto& c = state(b, r, o.cache);
        c.resize((b.position[r] + 1) * x.cols);
        std::copy_n(x.row(r).begin(), x.cols,
                    c.begin() + static_cast<std::ptrdiff_t>(b.position[r] * x.cols));
    }
}

void GraphEvaluator::OpEval::eval(std::size_t index, const AttendCache& o) {
    const Matrix& q = V(o.q);
    Matrix& out = V(o.out);
    const std::size_t hd = o.head_dim, kvw = o.kv_heads * hd, group = o.heads / o.kv_heads;
    const std::vector<double>* sinks = o.sinks ? &constant(*o.sinks) : nullptr;
    for (std::size_t r = 0; r < q.rows; ++r) {
        const auto& keys = state(b, r, o.keys);
        const auto& values = state(b, r, o.values);
        const std::size_t pos = b.position[r];
        if (keys.size() < (pos + 1) * kvw || values.size() < (pos + 1) * kvw)
            throw std::logic_error(fmt::format("op {}: the cache lacks position {}", index, pos));
        const std::size_t first = o.window && pos + 1 > *o.window ? pos + 1 - *o.window : 0;
        for (std::size_t h = 0; h < o.heads; ++h) {
            const std::size_t kh = h / group;
            std::vector<double> p;
            for (std::size_t j = first; j <= pos; ++j) {
                double s = 0;
                for (std::size_t i = 0; i < hd; ++i)
                    s += q.data[r * q.cols + h * hd + i] * keys[j * kvw + kh * hd + i];
                s *= o.scale;
                if (o.softcap) s = *o.softcap * std::tanh(s / *o.softcap);
                p.push_back(s);
            }
            if (sinks) p.push_back((*sinks)[h]);
            softmax(p);
            for (std::size_t i = 0; i < hd; ++i) {
                double s = 0;
                for (std::size_t j = first; j <= pos; ++j)
                    s += p[j - first] * values[j * kvw + kh * hd + i];
                out.data[r * out.cols + h * hd + i] = s;
            }
        }
    }
}

void GraphEvaluator::OpEval::eval(std::size_t, const Conv& o) {
    const auto& w = constant(o.w);
    const Matrix x = V(o.x);
    Matrix& out = V(o.out);
    const std::size_t C = x.cols, K = w.size() / C;
    for (std::size_t r = 0; r < x.rows; ++r) {
        auto& win = state(b, r, o.window); // (K − 1) rows of C, oldest first
        for (std::size_t c = 0; c < C; ++c) {
            double s = w[c * K + K - 1] * x.data[r * C + c];
            for (std::size_t j = 0; j + 1 < K; ++j)
                s += w[c * K + j] * win[j * C + c];
            out.data[r * C + c] = s;
        }
        if (K > 1) {
            std::copy(win.begin() + static_cast<std::ptrdiff_t>(C), win.end(), win.begin());
            std::copy_n(x.row(r).begin(), C, win.end() - static_cast<std::ptrdiff_t>(C));
        }
    }
}

void GraphEvaluator::OpEval::eval(std::size_t, const Silu& o) {
    const Matrix x = V(o.x);
    Matrix& out = V(o.out);
    for (std::size_t i = 0; i < x.data.size(); ++i)
        out.data[i] = silu(x.data[i]);
}

void GraphEvaluator::OpEval::eval(std::size_t, const L2Norm& o) {
    const Matrix x = V(o.x);
    Matrix& out = V(o.out);
    for (std::size_t r = 0; r < x.rows; ++r)
        for (std::size_t g0 = 0; g0 < x.cols; g0 += o.group) {
            double ss = 0;
            for (std::size_t i = 0; i < o.group; ++i)
                ss += x.data[r * x.cols + g0 + i] * x.data[r * x.cols + g0 + i];
            const double inv = 1.0 / std::sqrt(ss + o.eps) * o.scale;
            for (std::size_t i = 0; i < o.group; ++i)
                out.data[r * x.cols + g0 + i] = x.data[r * x.cols + g0 + i] * inv;
        }
}

void GraphEvaluator::OpEval::eval(std::size_t, const GdnGates& o) {
    const auto& a_log = constant(o.a_log);
    const auto& dt = constant(o.dt_bias);
    const Matrix& bb = V(o.b);
    const Matrix& a = V(o.a);
    Matrix& beta = V(o.beta);
    Matrix& g = V(o.g);
    for (std::size_t r = 0; r < a.rows; ++r)
        for (std::size_t h = 0; h < a.cols; ++h) {
            beta.data[r * a.cols + h] = sigmoid(bb.data[r * a.cols + h]);
            g.data[r * a.cols + h] = -std::exp(a_log[h]) * softplus(a.data[r * a.cols + h] + dt[h]);
        }
}

void GraphEvaluator::OpEval::eval(std::size_t, const DeltaStep& o) {
    const Matrix &q = V(o.q), &k = V(o.k), &v = V(o.v), &beta = V(o.beta), &g = V(o.g);
    Matrix& out = V(o.out);
    const std::size_t dk = o.dk, dv = o.dv, group = o.value_heads / o.key_heads;
    for (std::size_t r = 0; r < q.rows; ++r) {
        auto& S = state(b, r, o.state);
        for (std::size_t h = 0; h < o.value_heads; ++h) {
            double* s = &S[h * dk * dv];
            const double* kk = &k.data[r * k.cols + (h / group) * dk];
            const double* qq = &q.data[r * q.cols + (h / group) * dk];
            const double* vv = &v.data[r * v.cols + h * dv];
            const double decay = std::exp(g.data[r * g.cols + h]);
            for (std::size_t i = 0; i < dk * dv; ++i)
                s[i] *= decay;
            for (std::size_t j = 0; j < dv; ++j) {
                double mem = 0;
                for (std::size_t i = 0; i < dk; ++i)
                    mem += s[i * dv + j] * kk[i];
                const double delta = beta.data[r * beta.cols + h] * (vv[j] - mem);
                for (std::size_t i = 0; i < dk; ++i)
                    s[i * dv + j] += kk[i] * delta;
            }
            for (std::size_t j = 0; j < dv; ++j) {
                double o2 = 0;
                for (std::size_t i = 0; i < dk; ++i)
                    o2 += s[i * dv + j] * qq[i];
                out.data[r * out.cols + h * dv + j] = o2;
            }
        }
    }
}

void GraphEvaluator::OpEval::eval(std::size_t, const GatedRmsNorm& o) {
    const auto& w = constant(o.w);
    const Matrix x = V(o.x);
    const Matrix& z = V(o.z);
    Matrix& out = V(o.out);
    for (std::size_t r = 0; r < x.rows; ++r)
        for (std::size_t g0 = 0; g0 < x.cols; g0 += o.group) {
            double ss = 0;
            for (std::size_t i = 0; i < o.group; ++i)
                ss += x.data[r * x.cols + g0 + i] * x.data[r * x.cols + g0 + i];
            const double inv = 1.0 / std::sqrt(ss / static_cast<double>(o.group) + o.eps);
            for (std::size_t i = 0; i < o.group; ++i) {
                const std::size_t at = r * x.cols + g0 + i;
                out.data[at] = w[i] * (x.data[at] * inv) * silu(z.data[at]);
            }
        }
}

void GraphEvaluator::OpEval::eval(std::size_t, const SigmoidGate& o) {
    const Matrix x = V(o.x);
    const Matrix& gate = V(o.gate);
    Matrix& out = V(o.out);
    for (std::size_t i = 0; i < x.data.size(); ++i)
        out.data[i] = x.data[i] * sigmoid(gate.data[i]);
}

void GraphEvaluator::OpEval::eval(std::size_t, const SiluMul& o) {
    const Matrix gate = V(o.gate);
    const Matrix& up = V(o.up);
    Matrix& out = V(o.out);
    for (std::size_t i = 0; i < gate.data.size(); ++i)
        out.data[i] = silu(gate.data[i]) * up.data[i];
}

void GraphEvaluator::OpEval::eval(std::size_t, const Add& o) {
    const Matrix a = V(o.a);
    const Matrix& bb = V(o.b);
    Matrix& out = V(o.out);
    for (std::size_t i = 0; i < a.data.size(); ++i)
        out.data[i] = a.data[i] + bb.data[i];
}

void GraphEvaluator::OpEval::eval(std::size_t, const ArgMax& o) {
    const Matrix& x = V(o.x);
    Matrix& out = V(o.out);
    for (std::size_t r = 0; r < x.rows; ++r) {
        auto row = x.row(r);
        out.data[r] = static_cast<double>(std::max_element(row.begin(), row.end()) - row.begin());
    }
}

void GraphEvaluator::OpEval::eval(std::size_t, const Gelu& o) {
    const Matrix x = V(o.x);
    for (std::size_t i = 0; i < x.data.size(); ++i)
        V(o.out).data[i] = gelu(x.data[i]);
}

void GraphEvaluator::OpEval::eval(std::size_t, const Relu& o) {
    const Matrix x = V(o.x);
    for (std::size_t i = 0; i < x.data.size(); ++i)
        V(o.out).data[i] = std::max(0.0, x.data[i]);
}

void GraphEvaluator::OpEval::eval(std::size_t, const Scale& o) {
    const Matrix x = V(o.x);
    for (std::size_t i = 0; i < x.data.size(); ++i)
        V(o.out).data[i] = x.data[i] * o.factor;
}

void GraphEvaluator::OpEval::eval(std::size_t, const Softcap& o) {
    const Matrix x = V(o.x);
    for (std::size_t i = 0; i < x.data.size(); ++i)
        V(o.out).data[i] = o.cap * std::tanh(x.data[i] / o.cap);
}

void GraphEvaluator::OpEval::eval(std::size_t index, const Moe& o) {
    const MoeExtra* extra = self.graph_.moe_extra(index);
    const Matrix x = V(o.x);
    Matrix& out = V(o.out);
    const std::size_t H = x.cols;
    // y = W x for a Linear view W of [n, H].
    auto linear = [&](const Weight& w, const double* in, std::size_t k) {
        const auto& m = constant(w);
        std::vector<double> y(m.size() / k);
        for (std::size_t j = 0; j < y.size(); ++j)
            for (std::size_t i = 0; i < k; ++i)
                y[j] += m[j * k + i] * in[i];
        return y;
    };
    auto mlp = [&](const Weight& gw, const Weight& uw, const Weight& dw, const double* in) {
        auto gg = linear(gw, in, H);
        auto uu = linear(uw, in, H);
        for (std::size_t i = 0; i < gg.size(); ++i)
            gg[i] = silu(gg[i]) * uu[i];
        return linear(dw, gg.data(), gg.size());
    };
    for (std::size_t r = 0; r < x.rows; ++r) {
        const double* in = &x.data[r * H];
        auto p = linear(o.router, in, H);
        softmax(p);
        std::vector<std::size_t> order(p.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](auto i, auto j) { return p[i] > p[j]; });
        order.resize(o.top_k);
        double total = 0;
        for (auto e : order)
            total += p[e];
        std::vector<double> y(H, 0.0);
        for (auto e : order) {
            const double weight = (!extra || extra->norm_topk_prob) ? p[e] / total : p[e];
            auto ye = mlp(o.gate[e], o.up[e], o.down[e], in);
            for (std::size_t c = 0; c < H; ++c)
                y[c] += weight * ye[c];
        }
        if (o.shared_gate && o.shared_up && o.shared_down) {
            auto ys = mlp(*o.shared_gate, *o.shared_up, *o.shared_down, in);
            double gate = 1.0;
            if (extra && extra->shared_expert_gate)
                gate = sigmoid(linear(Weight{*extra->shared_expert_gate, Whole{true}}, in, H)[0]);
            for (std::size_t c = 0; c < H; ++c)
                y[c] += gate * ys[c];
        }
        std::copy(y.begin(), y.end(), out.data.begin() + static_cast<std::ptrdiff_t>(r * H));
    }
}

void GraphEvaluator::OpEval::eval(std::size_t, const HeadMatmul& o) {
    const auto& w = constant(o.w);
    const Matrix x = V(o.x);
    Matrix& out = V(o.out);
    const std::size_t k = x.cols / o.heads, n = out.cols / o.heads;
    const bool t = std::visit([](const auto& v) { return v.transpose; }, o.w.view);
    for (std::size_t r = 0; r < x.rows; ++r)
        for (std::size_t h = 0; h < o.heads; ++h)
            for (std::size_t j = 0; j < n; ++j) {
                double s = 0;
                for (std::size_t i = 0; i < k; ++i)
                    s += (t ? w[(h * n + j) * k + i] : w[(h * k + i) * n + j]) *
                         x.data[r * x.cols + h * k + i];
                out.data[r * out.cols + h * n + j] = s;
            }
}

void GraphEvaluator::OpEval::eval(std::size_t, const GeluMul& o) {
    const Matrix gate = V(o.gate), up = V(o.up);
    Matrix& out = V(o.out);
    for (std::size_t i = 0; i < gate.data.size(); ++i)
        out.data[i] = (o.tanh ? gelu_tanh(gate.data[i]) : gelu(gate.data[i])) * up.data[i];
}

void GraphEvaluator::OpEval::eval(std::size_t index, const LatentAttendCache& o) {
    const Matrix& ql = V(o.q_latent);
    const Matrix& qr = V(o.q_rope);
    Matrix& out = V(o.out);
    const std::size_t L = o.latent_dim, R = o.rope_dim;
    for (std::size_t r = 0; r < ql.rows; ++r) {
        const auto& latent = state(b, r, o.latent);
        const auto& rope = state(b, r, o.rope);
        const std::size_t pos = b.position[r];
        if (latent.size() < (pos + 1) * L || rope.size() < (pos + 1) * R)
            throw std::logic_error(fmt::format("op {}: the latent cache lacks position {}", index, pos));
        for (std::size_t h = 0; h < o.heads; ++h) {
            std::vector<double> p;
            for (std::size_t j = 0; j <= pos; ++j) {
                double s = 0;
                for (std::size_t i = 0; i < L; ++i)
                    s += ql.data[r * ql.cols + h * L + i] * latent[j * L + i];
                for (std::size_t i = 0; i < R; ++i)
                    s += qr.data[r * qr.cols + h * R + i] * rope[j * R + i];
                p.push_back(s * o.scale);
            }
            softmax(p);
            for (std::size_t i = 0; i < L; ++i) {
                double s = 0;
                for (std::size_t j = 0; j <= pos; ++j)
                    s += p[j] * latent[j * L + i];
                out.data[r * out.cols + h * L + i] = s;
            }
        }
    }
}

void GraphEvaluator::run(const Batch& b) {
    const Graph& g = graph_.graph;
    const Bucket bucket{b.tokens.size(), b.seq_ids.size(), b.marker_row.size()};
    vals_.assign(g.vals.size(), Matrix{});
    for (std::size_t v = 0; v < g.vals.size(); ++v) {
        vals_[v].rows = bucket.rows(g.vals[v].rows);
        vals_[v].cols = g.vals[v].width;
        vals_[v].data.assign(vals_[v].rows * vals_[v].cols, 0.0);
    }
    OpEval ops{*this, b};
    for (std::size_t index = 0; index < g.ops.size(); ++index)
        std::visit([&](const auto& o) { ops.eval(index, o); }, g.ops[index]);
}

} // namespace cardsim::models
