// The encoder reference, written from transformers' modeling_modernbert.py (eager attention), and
// the heads of models/README.md.

#include "engine/error.hpp"
#include "models/reference.hpp"
#include "models/reference_common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace cardsim::models {

using namespace reference;

struct EncoderReference::Weights {
    struct Layer {
        Vec attn_norm_w, attn_norm_b; // empty for layer 0 (Identity)
        Linear wqkv, wo;
        Vec mlp_norm_w, mlp_norm_b;
        Linear wi, wo_mlp;
    };
    std::size_t hidden = 0, heads = 0, every = 3, local = 128, types = 0;
    double eps = 1e-5, global_theta = 160000.0, local_theta = 10000.0;
    Vec embed, embed_norm_w, embed_norm_b, final_norm_w, final_norm_b, qtype;
    Linear marker, act;
    std::vector<Layer> layers;
};

namespace {

/// The tensor `name`, or empty if the checkpoint has none (an optional bias).
Vec optional_tensor(const Checkpoint& c, const std::string& name) {
    return has(c, name) ? tensor(c, name) : Vec{};
}

} // namespace

EncoderReference::EncoderReference(const Checkpoint& c) : w_(std::make_unique<Weights>()) {
    Weights& W = *w_;
    const Fields f(c.config(), c.config_path());
    if (f.text("model_type", "") != "modernbert")
        throw Error(fmt::format("{}: the encoder reference reads modernbert checkpoints", c.config_path()));
    W.hidden = f.count("hidden_size");
    W.heads = f.count("num_attention_heads");
    W.every = f.count("global_attn_every_n_layers", 3);
    W.local = f.count("local_attention", 128);
    W.eps = f.number("norm_eps", 1e-5);
    const auto rp = f.object("rope_parameters");
    auto theta = [&](const char* type, const char* old, double fallback) {
        if (rp)
            if (auto t = rp->object(type); t && t->has("rope_theta")) return t->number("rope_theta");
        return f.number(old, fallback);
    };
    W.global_theta = theta("full_attention", "global_rope_theta", 160000.0);
    W.local_theta = theta("sliding_attention", "local_rope_theta", 10000.0);
    const std::string p = has(c, "model.embeddings.tok_embeddings.weight") ? "model." : "";
    W.embed = tensor(c, p + "embeddings.tok_embeddings.weight");
    W.embed_norm_w = tensor(c, p + "embeddings.norm.weight");
    W.embed_norm_b = optional_tensor(c, p + "embeddings.norm.bias");
    const std::size_t L = f.count("num_hidden_layers");
    for (std::size_t i = 0; i < L; ++i) {
        const std::string lp = fmt::format("{}layers.{}.", p, i);
        Weights::Layer l;
        if (i > 0) {
            l.attn_norm_w = tensor(c, lp + "attn_norm.weight");
            l.attn_norm_b = optional_tensor(c, lp + "attn_norm.bias");
        }
        l.wqkv = linear(c, lp + "attn.Wqkv");
        l.wo = linear(c, lp + "attn.Wo");
        l.mlp_norm_w = tensor(c, lp + "mlp_norm.weight");
        l.mlp_norm_b = optional_tensor(c, lp + "mlp_norm.bias");
        l.wi = linear(c, lp + "mlp.Wi");
        l.wo_mlp = linear(c, lp + "mlp.Wo");
        W.layers.push_back(std::move(l));
    }
    W.final_norm_w = tensor(c, p + "final_norm.weight");
    W.final_norm_b = optional_tensor(c, p + "final_norm.bias");
    W.qtype = tensor(c, "heads.question_type.weight");
    W.types = W.qtype.size() / W.hidden;
    W.marker = linear(c, "heads.marker");
    W.act = linear(c, "heads.act");
}

EncoderReference::~EncoderReference() = default;
EncoderReference::EncoderReference(EncoderReference&&) noexcept = default;
EncoderReference& EncoderReference::operator=(EncoderReference&&) noexcept = default;

EncoderReference::Result EncoderReference::run(std::span<const std::int64_t> tokens,
                                               std::size_t question_type,
                                               std::span<const std::size_t> markers) const {
    const Weights& W = *w_;
    const std::size_t H = W.hidden, hd = H / W.heads, n = tokens.size();
    if (question_type >= W.types)
        throw Error(fmt::format("question type {} is outside the table of {}", question_type, W.types));
    std::vector<Vec> x(n);
    for (std::size_t t = 0; t < n; ++t) {
        const auto id = static_cast<std::size_t>(tokens[t]);
        if (tokens[t] < 0 || id * H >= W.embed.size())
            throw Error(fmt::format("token {} is outside the vocabulary", tokens[t]));
        Vec e(H);
        for (std::size_t c = 0; c < H; ++c)
            e[c] = W.embed[id * H + c] + W.qtype[question_type * H + c];
        x[t] = layer_norm(e, W.embed_norm_w, W.embed_norm_b, W.eps);
    }
    for (std::size_t i = 0; i < W.layers.size(); ++i) {
        const auto& l = W.layers[i];
        const bool global = i % W.every == 0;
        const double theta = global ? W.global_theta : W.local_theta;
        std::vector<Vec> qkv(n);
        for (std::size_t t = 0; t < n; ++t) {
            qkv[t] = l.wqkv(i == 0 ? x[t] : layer_norm(x[t], l.attn_norm_w, l.attn_norm_b, W.eps));
            for (std::size_t h = 0; h < W.heads; ++h) { // qkv viewed as [3, heads, hd]
                rope(&qkv[t][h * hd], hd, t, theta);
                rope(&qkv[t][H + h * hd], hd, t, theta);
            }
        }
        for (std::size_t t = 0; t < n; ++t) {
            Vec att(H, 0.0);
            for (std::size_t h = 0; h < W.heads; ++h) {
                std::vector<std::size_t> js;
                for (std::size_t j = 0; j < n; ++j) {
                    const std::size_t d = j > t ? j - t : t - j;
                    if (global || d <= W.local / 2) js.push_back(j);
                }
                Vec s;
                for (auto j : js) {
                    double d = 0;
                    for (std::size_t c = 0; c < hd; ++c)
                        d += qkv[t][h * hd + c] * qkv[j][H + h * hd + c];
                    s.push_back(d * std::pow(static_cast<double>(hd), -0.5));
                }
                const Vec p = softmax(s);
                for (std::size_t m = 0; m < js.size(); ++m)
                    for (std::size_t c = 0; c < hd; ++c)
                        att[h * hd + c] += p[m] * qkv[js[m]][2 * H + h * hd + c];
            }
            const Vec o = l.wo(att);
            for (std::size_t c = 0; c < H; ++c)
                x[t][c] += o[c];
        }
        for (std::size_t t = 0; t < n; ++t) {
            const Vec wi = l.wi(layer_norm(x[t], l.mlp_norm_w, l.mlp_norm_b, W.eps));
            const std::size_t I = wi.size() / 2;
            Vec act(I);
            for (std::size_t c = 0; c < I; ++c)
                act[c] = gelu(wi[c]) * wi[I + c]; // input, gate = chunk(2)
            const Vec o = l.wo_mlp(act);
            for (std::size_t c = 0; c < H; ++c)
                x[t][c] += o[c];
        }
    }
    Result r;
    for (std::size_t t = 0; t < n; ++t)
        r.hidden.push_back(layer_norm(x[t], W.final_norm_w, W.final_norm_b, W.eps));
    for (auto m : markers) {
        if (m >= n) throw Error(fmt::format("marker at position {} past the sequence's {} tokens", m, n));
        r.marker_logits.push_back(W.marker(r.hidden[m])[0]);
    }
    const std::size_t k = r.marker_logits.size();
    const Vec p = softmax(r.marker_logits);
    Vec sorted = p;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    double entropy = 0;
    for (double v : p)
        if (v > 0) entropy -= v * std::log(v);
    r.features = n > 0 ? r.hidden[0] : Vec(H, 0.0);
    const double top1 = k > 0 ? sorted[0] : 0.0, top2 = k > 1 ? sorted[1] : 0.0;
    r.features.push_back(top1);
    r.features.push_back(top1 - top2);
    r.features.push_back(k > 1 ? entropy / std::log(static_cast<double>(k)) : 0.0);
    r.features.push_back(static_cast<double>(k) / 255.0);
    const Vec a = W.act(r.features);
    r.act = {a[0], a[1]};
    return r;
}

} // namespace cardsim::models
