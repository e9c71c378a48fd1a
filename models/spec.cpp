#include "models/spec.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace cardsim::models {

std::string_view name(DecoderFamily f) {
    switch (f) {
    case DecoderFamily::Qwen3:
        return "qwen3";
    case DecoderFamily::Qwen2:
        return "qwen2";
    case DecoderFamily::Llama:
        return "llama";
    case DecoderFamily::Qwen3Next:
        return "qwen3_next";
    case DecoderFamily::Qwen3_5:
        return "qwen3_5";
    case DecoderFamily::Mistral:
        return "mistral";
    case DecoderFamily::Gemma2:
        return "gemma2";
    case DecoderFamily::DeepseekV2:
        return "deepseek_v2";
    case DecoderFamily::DeepseekV3:
        return "deepseek_v3";
    case DecoderFamily::Qwen3Moe:
        return "qwen3_moe";
    case DecoderFamily::Qwen3_5Moe:
        return "qwen3_5_moe";
    case DecoderFamily::GptOss:
        return "gpt_oss";
    }
    return "?";
}

std::string describe(const ModelSpec& spec) {
    if (auto* d = std::get_if<DecoderSpec>(&spec)) {
        const char* kind = d->delta ? (d->moe ? "hybrid decoder with experts" : "hybrid decoder")
                                    : (d->moe ? "dense decoder with experts" : "dense decoder");
        std::vector<std::string> with;
        if (d->latent) with.push_back("multi-head latent attention");
        if (d->attention.softcap || d->final_softcap) with.push_back("soft caps");
        if (std::any_of(d->layers.begin(), d->layers.end(), [](auto& l) { return l.window.has_value(); }))
            with.push_back("sliding windows");
        return fmt::format("{} ({}){}{}", kind, d->model_type, with.empty() ? "" : " with ",
                           fmt::join(with, ", "));
    }
    return "encoder (modernbert) with question-type, marker and act heads";
}

std::vector<std::string> layer_kinds(const ModelSpec& spec) {
    std::vector<std::string> out;
    if (auto* d = std::get_if<DecoderSpec>(&spec)) {
        for (auto& l : d->layers) {
            std::string k = l.mixer == Mixer::GatedDeltaNet     ? "deltanet"
                            : l.mixer == Mixer::LatentAttention ? "latent-attention"
                                                                : "attention";
            if (l.window) k += fmt::format("(window {})", *l.window);
            if (l.moe) k += "+moe";
            out.push_back(k);
        }
    } else {
        auto& e = std::get<EncoderSpec>(spec);
        for (std::size_t i = 0; i < e.layers; ++i)
            out.push_back(e.is_global(i) ? "global" : fmt::format("local(window {})", e.local_window));
    }
    return out;
}

std::optional<std::string> describe_experts(const ModelSpec& spec) {
    auto* d = std::get_if<DecoderSpec>(&spec);
    if (!d || !d->moe) return std::nullopt;
    const auto& m = *d->moe;
    const auto sparse = std::count_if(d->layers.begin(), d->layers.end(), [](auto& l) { return l.moe; });
    return fmt::format("{} in each of {} layer{}, {} chosen per token ({}), {} wide; {}", m.experts, sparse,
                       sparse == 1 ? "" : "s", m.top_k,
                       m.norm_topk_prob ? "softmax over the chosen" : "softmax over all, not renormalised",
                       m.intermediate,
                       m.shared_intermediate > 0 ? fmt::format("a shared expert {} wide under a sigmoid gate",
                                                               m.shared_intermediate)
                                                 : std::string("no shared expert"));
}

std::size_t active_parameters(const ModelSpec& spec, std::size_t total) {
    auto* d = std::get_if<DecoderSpec>(&spec);
    if (!d || !d->moe) return total;
    const auto& m = *d->moe;
    const auto sparse = static_cast<std::size_t>(
        std::count_if(d->layers.begin(), d->layers.end(), [](auto& l) { return l.moe; }));
    const std::size_t idle = sparse * (m.experts - m.top_k) * 3 * d->hidden * m.intermediate;
    return total > idle ? total - idle : 0;
}

} // namespace cardsim::models
