#include "models/recognise.hpp"

#include "engine/error.hpp"
#include "models/config_reader.hpp"

#include <fmt/format.h>

#include <array>

namespace cardsim::models {
namespace {

constexpr std::array<std::string_view, 15> types{
    "qwen3",     "qwen2",       "llama",       "qwen3_next", "qwen3_5",     "qwen3_5_text",     "mistral",
    "gemma2",    "deepseek_v2", "deepseek_v3", "qwen3_moe",  "qwen3_5_moe", "qwen3_5_moe_text", "gpt_oss",
    "modernbert"};

/// The tensor a decoder's prefix must hold.
constexpr std::string_view EMBED = "embed_tokens.weight";

} // namespace

std::span<const std::string_view> known_model_types() {
    return types;
}

ModelSpec parse_config(const boost::json::object& config, const std::string& file) {
    ConfigReader top(config, file, "");
    const std::string type = top.string("model_type");
    ConfigReader typed(config, file, type);
    if (type == "qwen3") return parse_decoder(typed, DecoderFamily::Qwen3, type);
    if (type == "qwen2") return parse_decoder(typed, DecoderFamily::Qwen2, type);
    if (type == "llama") return parse_decoder(typed, DecoderFamily::Llama, type);
    if (type == "qwen3_next") return parse_decoder(typed, DecoderFamily::Qwen3Next, type);
    if (type == "qwen3_5" || type == "qwen3_5_text")
        return parse_decoder(typed, DecoderFamily::Qwen3_5, type);
    if (type == "mistral") return parse_decoder(typed, DecoderFamily::Mistral, type);
    if (type == "gemma2") return parse_decoder(typed, DecoderFamily::Gemma2, type);
    if (type == "deepseek_v2") return parse_decoder(typed, DecoderFamily::DeepseekV2, type);
    if (type == "deepseek_v3") return parse_decoder(typed, DecoderFamily::DeepseekV3, type);
    if (type == "qwen3_moe") return parse_decoder(typed, DecoderFamily::Qwen3Moe, type);
    if (type == "qwen3_5_moe" || type == "qwen3_5_moe_text")
        return parse_decoder(typed, DecoderFamily::Qwen3_5Moe, type);
    if (type == "gpt_oss") return parse_decoder(typed, DecoderFamily::GptOss, type);
    if (type == "modernbert") return parse_encoder(typed);
    top.fail("model_type",
             fmt::format("is `{}`, which no recogniser knows (known: {})", type, fmt::join(types, ", ")));
}

ModelSpec recognise(const Checkpoint& checkpoint) {
    ModelSpec spec = parse_config(checkpoint.config(), checkpoint.config_path());
    if (auto* d = std::get_if<DecoderSpec>(&spec)) {
        if (!checkpoint.find(d->prefix + std::string(EMBED))) {
            for (std::string_view p : {"model.language_model.", "model.", "language_model.model.", ""})
                if (checkpoint.find(std::string(p) + std::string(EMBED))) {
                    d->prefix = p;
                    return spec;
                }
            throw Error(fmt::format("{}: a {} checkpoint needs its embedding `{}{}`, which it does not hold",
                                    checkpoint.dir().string(), d->model_type, d->prefix, EMBED));
        }
    } else {
        auto& e = std::get<EncoderSpec>(spec);
        const std::string embed = "embeddings.tok_embeddings.weight";
        if (!checkpoint.find(e.prefix + embed)) {
            if (checkpoint.find(embed))
                e.prefix.clear();
            else
                throw Error(fmt::format(
                    "{}: a modernbert checkpoint needs its embedding `{}{}`, which it does not hold",
                    checkpoint.dir().string(), e.prefix, embed));
        }
    }
    return spec;
}

} // namespace cardsim::models
