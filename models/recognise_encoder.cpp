// The encoder recogniser: ModernBERT (transformers `configuration_modernbert.py`) plus the fields of
// the seed's heads (models/README.md).

#include "models/config_reader.hpp"
#include "models/recognise.hpp"

#include <fmt/format.h>

namespace cardsim::models {

EncoderSpec parse_encoder(const ConfigReader& c) {
    EncoderSpec e;
    e.prefix = "model.";
    e.vocab = c.positive("vocab_size");
    e.hidden = c.positive("hidden_size");
    e.intermediate = c.positive("intermediate_size");
    e.layers = c.positive("num_hidden_layers");
    if (e.layers > MAX_LAYERS)
        c.fail("num_hidden_layers",
               fmt::format("is {}, more than the {} cardsim reads", e.layers, MAX_LAYERS));
    e.heads = c.positive("num_attention_heads");
    if (e.hidden % e.heads != 0)
        c.fail("hidden_size",
               fmt::format("is {}, not divisible by num_attention_heads = {}", e.hidden, e.heads));
    if (e.head_dim() % 2 != 0)
        c.fail("num_attention_heads", fmt::format("gives an odd head dim {}", e.head_dim()));
    e.eps = c.opt_positive_number("norm_eps").value_or(1e-5);
    e.norm_bias = c.opt_bool("norm_bias").value_or(false);
    e.attention_bias = c.opt_bool("attention_bias").value_or(false);
    e.mlp_bias = c.opt_bool("mlp_bias").value_or(false);
    if (auto act = c.opt_string("hidden_activation"); act && *act != "gelu")
        c.fail("hidden_activation",
               fmt::format("is `{}`; the GeGLU is built with the exact (erf) GELU only", *act));
    e.global_every = c.opt_positive("global_attn_every_n_layers").value_or(3);
    const std::size_t local = c.opt_positive("local_attention").value_or(128);
    if (local < 2)
        c.fail("local_attention", "must be at least 2 (local layers attend local_attention / 2 each way)");
    e.local_window = local / 2;

    // Thetas: the old fields, or `rope_parameters` by layer type; given twice they must agree.
    const auto rp = c.sub("rope_parameters");
    auto theta = [&](std::string_view old_key, std::string_view type, double fallback) {
        std::optional<double> nested;
        std::optional<ConfigReader> t = rp ? rp->sub(type) : std::nullopt;
        if (t) nested = t->opt_positive_number("rope_theta");
        auto flat = c.opt_positive_number(old_key);
        if (nested && flat && *nested != *flat)
            c.fail(old_key, fmt::format("is {} but `{}` is {}: contradictory", *flat, t->field("rope_theta"),
                                        *nested));
        return nested ? *nested : flat.value_or(fallback);
    };
    e.global_theta = theta("global_rope_theta", "full_attention", 160000.0);
    e.local_theta = theta("local_rope_theta", "sliding_attention", 10000.0);
    if (auto types = c.opt_strings("layer_types")) {
        if (types->size() != e.layers)
            c.fail("layer_types",
                   fmt::format("lists {} layers but num_hidden_layers is {}", types->size(), e.layers));
        for (std::size_t i = 0; i < e.layers; ++i) {
            const char* expected = e.is_global(i) ? "full_attention" : "sliding_attention";
            if ((*types)[i] != expected)
                c.fail("layer_types",
                       fmt::format("makes layer {} {} but global_attn_every_n_layers = {} makes it {}: "
                                   "contradictory",
                                   i, (*types)[i], e.global_every, expected));
        }
    }
    if (!c.has("num_question_types"))
        c.fail("num_question_types",
               "is missing: the encoder's graph needs its heads (a question-type table "
               "`heads.question_type.weight` of that many rows, the marker and act heads; see "
               "models/README.md)");
    e.question_types = c.positive("num_question_types");
    return e;
}

} // namespace cardsim::models
