#pragma once
// Recognising a checkpoint's architecture from config.json (and its tensor names).

#include "models/checkpoint.hpp"
#include "models/config_reader.hpp"
#include "models/spec.hpp"

#include <boost/json/object.hpp>

#include <string>

namespace cardsim::models {

/// The most layers a config may declare (real models have at most a few hundred).
inline constexpr std::size_t MAX_LAYERS = 4096;
/// The most experts a config may declare per layer.
inline constexpr std::size_t MAX_EXPERTS = 4096;

/// The `model_type`s the recognisers know: qwen3, qwen2, llama, qwen3_next, qwen3_5, qwen3_5_text,
/// mistral, gemma2, deepseek_v2, deepseek_v3, qwen3_moe, qwen3_5_moe, qwen3_5_moe_text, modernbert.
std::span<const std::string_view> known_model_types();

/// Reads the architecture from config.json's `config` (read from `file`, named in errors), with the
/// default tensor prefix of its type. Every field a graph needs is checked: missing fields,
/// wrong types, and contradictions (hidden size not divisible by heads, heads not a multiple of kv
/// heads, `layer_types` against `full_attention_interval`, a value given twice that disagrees, an
/// odd rotary dim, more than MAX_LAYERS layers or MAX_EXPERTS experts) are cardsim::Errors naming
/// the file and field.
ModelSpec parse_config(const boost::json::object& config, const std::string& file);

/// Recognises `checkpoint`: `parse_config` of its config.json, then the tensor prefix actually used
/// (e.g. `model.language_model.` or `model.` for Qwen3.5).
ModelSpec recognise(const Checkpoint& checkpoint);

/// The decoder part of `parse_config`, for a `model_type` of `family`.
DecoderSpec parse_decoder(const ConfigReader& top, DecoderFamily family, const std::string& model_type);

/// The encoder part of `parse_config` (`model_type` modernbert).
EncoderSpec parse_encoder(const ConfigReader& top);

} // namespace cardsim::models
