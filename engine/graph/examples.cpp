#include "engine/graph/examples.hpp"

#include <fmt/core.h>

#include <cmath>

namespace cardsim::graph {

Graph example_decoder(const DecoderShape& s) {
    Graph g;
    W next_w = 0;
    auto w = [&] { return Weight{next_w++, Whole{}}; };
    const auto T = Rows::Tokens;
    const std::size_t q_width = s.heads * s.head_dim, kv_width = s.kv_heads * s.head_dim;
    auto h = g.val(T, s.hidden, "h");
    g.push(Embed{w(), h}, {std::nullopt, Part::Embedding});
    for (std::size_t l = 0; l < s.layers; ++l) {
        auto name = [&](const char* what) { return fmt::format("layer{}.{}", l, what); };
        Site attn{l, Part::Attention}, ffn{l, Part::Ffn};
        auto keys = g.state(KeyCache{s.kv_heads, s.head_dim});
        auto values = g.state(ValueCache{s.kv_heads, s.head_dim});
        auto x = g.val(T, s.hidden, name("x"));
        g.push(RmsNorm{h, w(), 1e-6, false, s.hidden, x}, attn);
        auto q = g.val(T, q_width, name("q")), k = g.val(T, kv_width, name("k")),
             v = g.val(T, kv_width, name("v"));
        g.push(Gemm{x, w(), std::nullopt, Epilogue::None, q}, attn);
        g.push(Gemm{x, w(), std::nullopt, Epilogue::None, k}, attn);
        g.push(Gemm{x, w(), std::nullopt, Epilogue::None, v}, attn);
        g.push(RmsNorm{q, w(), 1e-6, false, s.head_dim, q}, attn);
        g.push(RmsNorm{k, w(), 1e-6, false, s.head_dim, k}, attn);
        g.push(Rotate{q, s.head_dim, s.head_dim, 1e6, false, {}}, attn);
        g.push(Rotate{k, s.head_dim, s.head_dim, 1e6, false, {}}, attn);
        g.push(CacheAppend{k, keys}, attn);
        g.push(CacheAppend{v, values}, attn);
        auto o = g.val(T, q_width, name("o"));
        g.push(AttendCache{q, keys, values, s.heads, s.kv_heads, s.head_dim,
                           1.0 / std::sqrt(double(s.head_dim)), std::nullopt, std::nullopt, std::nullopt, o},
               attn);
        auto y = g.val(T, s.hidden, name("attn_out"));
        g.push(Gemm{o, w(), std::nullopt, Epilogue::None, y}, attn);
        g.push(Add{h, y, h}, attn);
        auto x2 = g.val(T, s.hidden, name("x2"));
        g.push(RmsNorm{h, w(), 1e-6, false, s.hidden, x2}, ffn);
        auto gate = g.val(T, s.intermediate, name("gate")), up = g.val(T, s.intermediate, name("up"));
        g.push(Gemm{x2, w(), std::nullopt, Epilogue::None, gate}, ffn);
        g.push(Gemm{x2, w(), std::nullopt, Epilogue::None, up}, ffn);
        auto m = g.val(T, s.intermediate, name("m"));
        g.push(SiluMul{gate, up, m}, ffn);
        auto d = g.val(T, s.hidden, name("down"));
        g.push(Gemm{m, w(), std::nullopt, Epilogue::None, d}, ffn);
        g.push(Add{h, d, h}, ffn);
    }
    Site head{std::nullopt, Part::Head};
    auto xf = g.val(T, s.hidden, "final");
    g.push(RmsNorm{h, w(), 1e-6, false, s.hidden, xf}, head);
    auto logits = g.val(T, s.vocab, "logits");
    g.push(Gemm{xf, w(), std::nullopt, Epilogue::None, logits}, head);
    auto next = g.val(T, 1, "next");
    g.push(ArgMax{logits, next}, head);
    g.logits = logits;
    g.next = next;
    return g;
}

Graph example_encoder(const EncoderShape& s) {
    Graph g;
    W next_w = 0;
    auto w = [&] { return Weight{next_w++, Whole{}}; };
    const auto T = Rows::Tokens;
    const std::size_t head_dim = s.hidden / s.heads;
    auto e = g.val(T, s.hidden, "embed");
    g.push(Embed{w(), e}, {std::nullopt, Part::Embedding});
    auto h = g.val(T, s.hidden, "h");
    g.push(LayerNorm{e, w(), std::nullopt, 1e-5, h}, {std::nullopt, Part::Embedding});
    for (std::size_t l = 0; l < s.layers; ++l) {
        auto name = [&](const char* what) { return fmt::format("layer{}.{}", l, what); };
        Site attn{l, Part::Attention}, ffn{l, Part::Ffn};
        auto x = g.val(T, s.hidden, name("x"));
        g.push(LayerNorm{h, w(), std::nullopt, 1e-5, x}, attn);
        auto qkv = g.val(T, 3 * s.hidden, name("qkv"));
        g.push(Gemm{x, w(), std::nullopt, Epilogue::None, qkv}, attn);
        const bool global = l % s.global_every == 0;
        g.push(Rope{qkv, s.heads, head_dim, global ? 160000.0 : 10000.0}, attn);
        auto o = g.val(T, s.hidden, name("o"));
        g.push(Attention{qkv, s.heads, head_dim, global ? std::nullopt : std::optional(s.window / 2), o},
               attn);
        g.push(Gemm{o, w(), std::nullopt, Epilogue::Accumulate, h}, attn);
        auto x2 = g.val(T, s.hidden, name("x2"));
        g.push(LayerNorm{h, w(), std::nullopt, 1e-5, x2}, ffn);
        auto wi = g.val(T, 2 * s.intermediate, name("wi"));
        g.push(Gemm{x2, w(), std::nullopt, Epilogue::None, wi}, ffn);
        auto act = g.val(T, s.intermediate, name("geglu"));
        g.push(GeGlu{wi, act}, ffn);
        g.push(Gemm{act, w(), std::nullopt, Epilogue::Accumulate, h}, ffn);
    }
    Site head{std::nullopt, Part::Head};
    auto hf = g.val(T, s.hidden, "final");
    g.push(LayerNorm{h, w(), std::nullopt, 1e-5, hf}, head);
    g.push(AddType{hf, w()}, head);
    auto marks = g.val(Rows::Markers, s.hidden, "markers");
    g.push(GatherMarkers{hf, marks}, head);
    auto logits = g.val(Rows::Markers, 1, "marker_logits");
    g.push(Gemm{marks, w(), std::nullopt, Epilogue::None, logits}, head);
    auto feats = g.val(Rows::Seqs, s.hidden + 4, "act_features");
    g.push(ActFeatures{hf, logits, feats}, head);
    auto act = g.val(Rows::Seqs, 2, "act");
    g.push(Gemm{feats, w(), std::nullopt, Epilogue::None, act}, head);
    g.logits = logits;
    g.act = act;
    return g;
}

} // namespace cardsim::graph
