#include "engine/shim/class_id.hpp"

#include <array>

namespace cardsim::shim {
namespace {

constexpr std::array<std::string_view, class_count> names{
    "merged_qkv",
    "conv_bias_silu",
    "gdn_gating",
    "glu_act_mul",
    "norm_weight",
    "add_norm",
    "norm_then_add",
    "norm_scale",
    "norm_weight_offset",
    "dual_norm",
    "gated_norm",
    "embed_norm",
    "gemv_norm_epilogue",
    "prefill_norm_epilogues",
    "attn_residual_norm",
    "recompute_fanout",
    "elementwise_chains",
    "elementwise_regions",
    "qk_norm_rope",
    "qk_norm_rope_kv_append",
    "rope_kv_append",
    "rope_qk_one_launch",
    "qk_norm_rope_gate_split",
    "qkv_head_epilogue",
    "horizontal_norm_rope_insert",
    "cross_layer_launch",
    "conv_parts",
    "conv_silu_l2norm",
    "gdn_gate_projections",
    "gdn_input_epilogue",
    "gdn_post_conv_prep",
    "gdn_decode_whole",
    "gemv_gate_up_glu",
    "merged_gate_up",
    "gemm_dequant_inkernel",
    "fused_sampling",
    "last_layer_rows",
    "norm_quant",
    "add_norm_quant",
    "glu_act_mul_quant",
    "elementwise_quant",
    "gdn_output_quant",
    "gemv_quant",
    "attn_output_quant",
    "gdn_step",
    "attn_output_gate",
    "row_write_quant",
    "gemm_bias",
    "gemm_scale",
    "affine_input_fold",
    "embed_scale",
    "mla",
    "mla_prologue",
    "mla_unabsorb_in_fold",
    "router_topk",
    "moe_token_sort",
    "moe_gate_up_act",
    "moe_down_combine",
    "shared_expert_fusion",
    "moe_gather_in_operand",
    "moe_deferred_finalize",
    "moe_direct_pairs",
    "grouped_topk",
    "router_shared_gate_merge",
    "masked_expert_activation",
    "flash_decode",
    "flash_prefill",
    "attn_lse_merge",
    "attn_gqa_row_packing",
    "attention_variants_inline",
    "softcap",
    "mixed_batch_attention",
    "sparse_attention",
    "strided_read",
    "row_write",
    "join_in_place",
    "strided_values",
    "relu_sqr",
    "sampling",
    "kv_cache_quant",
    "hadamard_rotation",
    "compensated_residual",
    "host_resident_kv",
    "persistent_layer_megakernel",
    "cuda_graphs",
    "allreduce_norm",
};

constexpr std::array<ClassId, class_count> every = [] {
    std::array<ClassId, class_count> a{};
    for (std::size_t i = 0; i < class_count; ++i)
        a[i] = static_cast<ClassId>(i);
    return a;
}();

} // namespace

std::string_view name(ClassId c) {
    return names.at(static_cast<std::size_t>(c));
}

std::optional<ClassId> class_named(std::string_view s) {
    for (std::size_t i = 0; i < class_count; ++i)
        if (names[i] == s) return static_cast<ClassId>(i);
    return std::nullopt;
}

std::span<const ClassId> all_classes() {
    return every;
}

} // namespace cardsim::shim
