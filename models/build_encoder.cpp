// The encoder graph (the seed's plan): ModernBERT (transformers `modeling_modernbert.py`) with the
// question-type, marker and act heads of models/README.md.

#include "models/build.hpp"
#include "models/tensors.hpp"

#include <fmt/format.h>

namespace cardsim::models {
namespace {

using namespace graph;

} // namespace

BuiltGraph build_encoder(const EncoderSpec& e, const std::map<std::string, graph::W>& t) {
    const EncoderNames n{e};
    const std::size_t H = e.hidden, I = e.intermediate;
    auto plain = [&](const std::string& name) { return Weight{t.at(name), Whole{false}}; };
    auto linear = [&](const std::string& name) { return Weight{t.at(name), Whole{true}}; };
    auto opt = [&](bool has, const std::string& name) {
        return has ? std::optional(plain(name)) : std::nullopt;
    };
    Graph g;

    const Site emb{std::nullopt, Part::Embedding};
    Val tokens = g.val(Rows::Tokens, H, "embed");
    g.push(Embed{plain(n.embed()), tokens}, emb);
    g.push(AddType{tokens, plain(std::string(QUESTION_TYPE_TABLE))}, emb);
    Val x = g.val(Rows::Tokens, H, "hidden");
    g.push(LayerNorm{tokens, plain(n.embed_norm()), opt(e.norm_bias, n.embed_norm("bias")), e.eps, x}, emb);

    const std::size_t hd = e.head_dim();
    for (std::size_t i = 0; i < e.layers; ++i) {
        auto name = [&](std::string_view what) { return fmt::format("layer{}.{}", i, what); };
        auto layer = [&](std::string_view rest) { return n.layer(i, rest); };
        const Site att{i, Part::Attention};
        Val in = x; // layer 0's attention norm is the identity
        if (i > 0) {
            in = g.val(Rows::Tokens, H, name("attn_norm"));
            g.push(LayerNorm{x, plain(layer("attn_norm.weight")), opt(e.norm_bias, layer("attn_norm.bias")),
                             e.eps, in},
                   att);
        }
        Val qkv = g.val(Rows::Tokens, 3 * H, name("qkv"));
        g.push(Gemm{in, linear(layer("attn.Wqkv.weight")), opt(e.attention_bias, layer("attn.Wqkv.bias")),
                    Epilogue::None, qkv},
               att);
        const bool global = e.is_global(i);
        g.push(Rope{qkv, e.heads, hd, global ? e.global_theta : e.local_theta}, att);
        Val a = g.val(Rows::Tokens, H, name("attn"));
        g.push(Attention{qkv, e.heads, hd, global ? std::nullopt : std::optional(e.local_window), a}, att);
        g.push(Gemm{a, linear(layer("attn.Wo.weight")), opt(e.attention_bias, layer("attn.Wo.bias")),
                    Epilogue::Accumulate, x},
               att);

        const Site ffn{i, Part::Ffn};
        Val m = g.val(Rows::Tokens, H, name("mlp_norm"));
        g.push(
            LayerNorm{x, plain(layer("mlp_norm.weight")), opt(e.norm_bias, layer("mlp_norm.bias")), e.eps, m},
            ffn);
        Val wi = g.val(Rows::Tokens, 2 * I, name("wi"));
        g.push(Gemm{m, linear(layer("mlp.Wi.weight")), opt(e.mlp_bias, layer("mlp.Wi.bias")), Epilogue::None,
                    wi},
               ffn);
        Val act = g.val(Rows::Tokens, I, name("geglu"));
        g.push(GeGlu{wi, act}, ffn);
        g.push(Gemm{act, linear(layer("mlp.Wo.weight")), opt(e.mlp_bias, layer("mlp.Wo.bias")),
                    Epilogue::Accumulate, x},
               ffn);
    }

    const Site head{std::nullopt, Part::Head};
    Val f = g.val(Rows::Tokens, H, "final_norm");
    g.push(LayerNorm{x, plain(n.final_norm()), opt(e.norm_bias, n.final_norm("bias")), e.eps, f}, head);
    Val markers = g.val(Rows::Markers, H, "markers");
    g.push(GatherMarkers{f, markers}, head);
    Val logits = g.val(Rows::Markers, 1, "marker_logits");
    g.push(Gemm{markers, linear(std::string(MARKER_WEIGHT)), plain(std::string(MARKER_BIAS)), Epilogue::None,
                logits},
           head);
    Val features = g.val(Rows::Seqs, H + 4, "act_features");
    g.push(ActFeatures{f, logits, features}, head);
    Val act = g.val(Rows::Seqs, 2, "act");
    g.push(Gemm{features, linear(std::string(ACT_WEIGHT)), plain(std::string(ACT_BIAS)), Epilogue::None, act},
           head);
    g.logits = logits;
    g.act = act;
    return BuiltGraph{std::move(g)};
}

} // namespace cardsim::models
