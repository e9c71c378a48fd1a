#include "models/tensors.hpp"

#include <fmt/format.h>

namespace cardsim::models {

std::string DecoderNames::layer(std::size_t i, std::string_view rest) const {
    return fmt::format("{}layers.{}.{}", spec.prefix, i, rest);
}
std::string DecoderNames::embed() const {
    return spec.prefix + "embed_tokens.weight";
}
std::string DecoderNames::final_norm() const {
    return spec.prefix + "norm.weight";
}
std::string DecoderNames::lm_head() const {
    return spec.tied ? embed() : "lm_head.weight";
}

std::string EncoderNames::layer(std::size_t i, std::string_view rest) const {
    return fmt::format("{}layers.{}.{}", spec.prefix, i, rest);
}
std::string EncoderNames::embed() const {
    return spec.prefix + "embeddings.tok_embeddings.weight";
}
std::string EncoderNames::embed_norm(std::string_view what) const {
    return fmt::format("{}embeddings.norm.{}", spec.prefix, what);
}
std::string EncoderNames::final_norm(std::string_view what) const {
    return fmt::format("{}final_norm.{}", spec.prefix, what);
}

namespace {

using Shape = std::vector<std::size_t>;

void decoder_tensors(const DecoderSpec& d, std::vector<TensorSpec>& out) {
    const DecoderNames n{d};
    const Role norm = d.zero_centred ? Role::ZeroCentredNorm : Role::Norm;
    const std::size_t H = d.hidden;
    auto add = [&](std::string name, Shape shape, Role role) {
        out.push_back({std::move(name), std::move(shape), role});
    };
    add(n.embed(), {d.vocab, H}, Role::Embedding);
    const auto& a = d.attention;
    for (std::size_t i = 0; i < d.layers.size(); ++i) {
        const auto& layer = d.layers[i];
        add(n.layer(i, "input_layernorm.weight"), {H}, norm);
        if (layer.mixer == Mixer::LatentAttention) {
            const auto& m = *d.latent;
            const std::size_t heads = a.heads;
            if (m.q_rank > 0) {
                add(n.layer(i, "self_attn.q_a_proj.weight"), {m.q_rank, H}, Role::Linear);
                add(n.layer(i, "self_attn.q_a_layernorm.weight"), {m.q_rank}, norm);
                add(n.layer(i, "self_attn.q_b_proj.weight"), {heads * m.qk_dim(), m.q_rank}, Role::Linear);
            } else {
                add(n.layer(i, "self_attn.q_proj.weight"), {heads * m.qk_dim(), H}, Role::Linear);
            }
            add(n.layer(i, "self_attn.kv_a_proj_with_mqa.weight"), {m.kv_rank + m.rope, H}, Role::Linear);
            add(n.layer(i, "self_attn.kv_a_layernorm.weight"), {m.kv_rank}, norm);
            add(n.layer(i, "self_attn.kv_b_proj.weight"), {heads * (m.nope + m.value), m.kv_rank},
                Role::Linear);
            add(n.layer(i, "self_attn.o_proj.weight"), {H, heads * m.value}, Role::Linear);
        } else if (layer.mixer == Mixer::Attention) {
            const std::size_t q = a.heads * a.head_dim * (a.output_gate ? 2 : 1),
                              kv = a.kv_heads * a.head_dim;
            add(n.layer(i, "self_attn.q_proj.weight"), {q, H}, Role::Linear);
            add(n.layer(i, "self_attn.k_proj.weight"), {kv, H}, Role::Linear);
            add(n.layer(i, "self_attn.v_proj.weight"), {kv, H}, Role::Linear);
            add(n.layer(i, "self_attn.o_proj.weight"), {H, a.heads * a.head_dim}, Role::Linear);
            if (a.qkv_bias) {
                add(n.layer(i, "self_attn.q_proj.bias"), {q}, Role::Bias);
                add(n.layer(i, "self_attn.k_proj.bias"), {kv}, Role::Bias);
                add(n.layer(i, "self_attn.v_proj.bias"), {kv}, Role::Bias);
            }
            if (a.o_bias) add(n.layer(i, "self_attn.o_proj.bias"), {H}, Role::Bias);
            if (a.sinks) add(n.layer(i, "self_attn.sinks"), {a.heads}, Role::Bias);
            if (a.qk_norm) {
                add(n.layer(i, "self_attn.q_norm.weight"), {a.head_dim}, norm);
                add(n.layer(i, "self_attn.k_norm.weight"), {a.head_dim}, norm);
            }
        } else {
            const auto& g = *d.delta;
            const std::size_t key = g.key_heads * g.key_dim, value = g.value_heads * g.value_dim;
            if (g.grouped) {
                add(n.layer(i, "linear_attn.in_proj_qkvz.weight"), {2 * key + 2 * value, H}, Role::Linear);
                add(n.layer(i, "linear_attn.in_proj_ba.weight"), {2 * g.value_heads, H}, Role::Linear);
            } else {
                add(n.layer(i, "linear_attn.in_proj_qkv.weight"), {2 * key + value, H}, Role::Linear);
                add(n.layer(i, "linear_attn.in_proj_z.weight"), {value, H}, Role::Linear);
                add(n.layer(i, "linear_attn.in_proj_b.weight"), {g.value_heads, H}, Role::Linear);
                add(n.layer(i, "linear_attn.in_proj_a.weight"), {g.value_heads, H}, Role::Linear);
            }
            add(n.layer(i, "linear_attn.conv1d.weight"), {g.conv_dim(), 1, g.kernel}, Role::Conv);
            add(n.layer(i, "linear_attn.dt_bias"), {g.value_heads}, Role::DtBias);
            add(n.layer(i, "linear_attn.A_log"), {g.value_heads}, Role::ALog);
            add(n.layer(i, "linear_attn.norm.weight"), {g.value_dim}, Role::Norm);
            add(n.layer(i, "linear_attn.out_proj.weight"), {H, value}, Role::Linear);
        }
        add(n.layer(i, "post_attention_layernorm.weight"), {H}, norm);
        if (d.sandwich_norms) {
            add(n.layer(i, "pre_feedforward_layernorm.weight"), {H}, norm);
            add(n.layer(i, "post_feedforward_layernorm.weight"), {H}, norm);
        }
        if (layer.moe && d.moe->transposed) { // gpt-oss: input rows, gate and up interleaved
            const auto& m = *d.moe;
            add(n.layer(i, "mlp.router.weight"), {m.experts, H}, Role::Linear);
            add(n.layer(i, "mlp.router.bias"), {m.experts}, Role::Bias);
            add(n.layer(i, "mlp.experts.gate_up_proj"), {m.experts, H, 2 * m.intermediate},
                Role::LinearInOut);
            add(n.layer(i, "mlp.experts.gate_up_proj_bias"), {m.experts, 2 * m.intermediate}, Role::Bias);
            add(n.layer(i, "mlp.experts.down_proj"), {m.experts, m.intermediate, H}, Role::LinearInOut);
            add(n.layer(i, "mlp.experts.down_proj_bias"), {m.experts, H}, Role::Bias);
        } else if (layer.moe) {
            const auto& m = *d.moe;
            add(n.layer(i, "mlp.gate.weight"), {m.experts, H}, Role::Linear);
            if (m.fused) {
                add(n.layer(i, "mlp.experts.gate_up_proj"), {m.experts, 2 * m.intermediate, H}, Role::Linear);
                add(n.layer(i, "mlp.experts.down_proj"), {m.experts, H, m.intermediate}, Role::Linear);
            }
            for (std::size_t e = 0; !m.fused && e < m.experts; ++e) {
                add(n.layer(i, fmt::format("mlp.experts.{}.gate_proj.weight", e)), {m.intermediate, H},
                    Role::Linear);
                add(n.layer(i, fmt::format("mlp.experts.{}.up_proj.weight", e)), {m.intermediate, H},
                    Role::Linear);
                add(n.layer(i, fmt::format("mlp.experts.{}.down_proj.weight", e)), {H, m.intermediate},
                    Role::Linear);
            }
            if (m.shared_intermediate > 0) {
                add(n.layer(i, "mlp.shared_expert.gate_proj.weight"), {m.shared_intermediate, H},
                    Role::Linear);
                add(n.layer(i, "mlp.shared_expert.up_proj.weight"), {m.shared_intermediate, H}, Role::Linear);
                add(n.layer(i, "mlp.shared_expert.down_proj.weight"), {H, m.shared_intermediate},
                    Role::Linear);
                add(n.layer(i, "mlp.shared_expert_gate.weight"), {1, H}, Role::Linear);
            }
        } else {
            add(n.layer(i, "mlp.gate_proj.weight"), {d.intermediate, H}, Role::Linear);
            add(n.layer(i, "mlp.up_proj.weight"), {d.intermediate, H}, Role::Linear);
            add(n.layer(i, "mlp.down_proj.weight"), {H, d.intermediate}, Role::Linear);
            if (d.mlp_bias) {
                add(n.layer(i, "mlp.gate_proj.bias"), {d.intermediate}, Role::Bias);
                add(n.layer(i, "mlp.up_proj.bias"), {d.intermediate}, Role::Bias);
                add(n.layer(i, "mlp.down_proj.bias"), {H}, Role::Bias);
            }
        }
    }
    add(n.final_norm(), {H}, norm);
    if (!d.tied) add(n.lm_head(), {d.vocab, H}, Role::Linear);
}

void encoder_tensors(const EncoderSpec& e, std::vector<TensorSpec>& out) {
    const EncoderNames n{e};
    const std::size_t H = e.hidden, I = e.intermediate;
    auto add = [&](std::string name, Shape shape, Role role) {
        out.push_back({std::move(name), std::move(shape), role});
    };
    add(n.embed(), {e.vocab, H}, Role::Embedding);
    add(n.embed_norm(), {H}, Role::Norm);
    if (e.norm_bias) add(n.embed_norm("bias"), {H}, Role::Bias);
    for (std::size_t i = 0; i < e.layers; ++i) {
        if (i > 0) {
            add(n.layer(i, "attn_norm.weight"), {H}, Role::Norm);
            if (e.norm_bias) add(n.layer(i, "attn_norm.bias"), {H}, Role::Bias);
        }
        add(n.layer(i, "attn.Wqkv.weight"), {3 * H, H}, Role::Linear);
        if (e.attention_bias) add(n.layer(i, "attn.Wqkv.bias"), {3 * H}, Role::Bias);
        add(n.layer(i, "attn.Wo.weight"), {H, H}, Role::Linear);
        if (e.attention_bias) add(n.layer(i, "attn.Wo.bias"), {H}, Role::Bias);
        add(n.layer(i, "mlp_norm.weight"), {H}, Role::Norm);
        if (e.norm_bias) add(n.layer(i, "mlp_norm.bias"), {H}, Role::Bias);
        add(n.layer(i, "mlp.Wi.weight"), {2 * I, H}, Role::Linear);
        if (e.mlp_bias) add(n.layer(i, "mlp.Wi.bias"), {2 * I}, Role::Bias);
        add(n.layer(i, "mlp.Wo.weight"), {H, I}, Role::Linear);
        if (e.mlp_bias) add(n.layer(i, "mlp.Wo.bias"), {H}, Role::Bias);
    }
    add(n.final_norm(), {H}, Role::Norm);
    if (e.norm_bias) add(n.final_norm("bias"), {H}, Role::Bias);
    add(std::string(QUESTION_TYPE_TABLE), {e.question_types, H}, Role::Table);
    add(std::string(MARKER_WEIGHT), {1, H}, Role::Linear);
    add(std::string(MARKER_BIAS), {1}, Role::Bias);
    add(std::string(ACT_WEIGHT), {2, H + 4}, Role::Linear);
    add(std::string(ACT_BIAS), {2}, Role::Bias);
}

} // namespace

std::size_t expected_tensor_count(const ModelSpec& spec) {
    if (auto* e = std::get_if<EncoderSpec>(&spec)) {
        const std::size_t norm = e->norm_bias ? 2 : 1, attn = e->attention_bias ? 2 : 1,
                          mlp = e->mlp_bias ? 2 : 1;
        std::size_t n = 1 + norm + norm + 5; // embedding and its norm, final norm, heads
        for (std::size_t i = 0; i < e->layers; ++i)
            n += (i > 0 ? norm : 0) + 2 * attn + norm + 2 * mlp;
        return n;
    }
    const auto& d = std::get<DecoderSpec>(spec);
    std::size_t n = 2 + (d.tied ? 0 : 1); // embedding, final norm, head
    const auto& a = d.attention;
    for (const auto& l : d.layers) {
        n += d.sandwich_norms ? 4 : 2; // the norms
        if (l.mixer == Mixer::LatentAttention)
            n += (d.latent->q_rank > 0 ? 3 : 1) + 4;
        else if (l.mixer == Mixer::Attention)
            n += 4 + (a.qkv_bias ? 3 : 0) + (a.o_bias ? 1 : 0) + (a.qk_norm ? 2 : 0) + (a.sinks ? 1 : 0);
        else
            n += (d.delta->grouped ? 2 : 4) + 5;
        if (l.moe && d.moe->transposed)
            n += 6; // the router and its bias, gate_up and down and their biases
        else if (l.moe)
            n += 1 + (d.moe->fused ? 2 : 3 * d.moe->experts) + (d.moe->shared_intermediate > 0 ? 4 : 0);
        else
            n += 3 + (d.mlp_bias ? 3 : 0);
    }
    return n;
}

std::vector<TensorSpec> expected_tensors(const ModelSpec& spec) {
    std::vector<TensorSpec> out;
    if (auto* d = std::get_if<DecoderSpec>(&spec))
        decoder_tensors(*d, out);
    else
        encoder_tensors(std::get<EncoderSpec>(spec), out);
    return out;
}

} // namespace cardsim::models
