#pragma once
// Synthetic checkpoints: a real config.json and safetensors with an architecture's real tensor
// names, filled with deterministic values of realistic scale (`cardsim make-model`).

#include "models/dtype.hpp"
#include "models/spec.hpp"
#include "models/tensors.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

namespace cardsim::models {

/// The architectures `make-model` writes: Qwen3 (dense), Qwen3.5 (hybrid), Qwen3-Next with experts
/// (hybrid-moe), ModernBERT with the seed's heads (encoder), Mistral (windowed: every layer a sliding
/// window), Gemma-2 (softcap: soft-capped scores and logits, alternating windows, scaled embedding,
/// GeGLU), DeepSeek-V3 with dense layers only (mla: multi-head latent attention), Qwen3-MoE (moe:
/// Qwen3-30B-A3B's layout, experts in every layer, no shared expert; tiny and small only) and
/// Qwen3.5-MoE (hybrid-moe35: Qwen3.5-35B-A3B's layout, the hybrid with experts in every layer
/// stored fused, a shared expert under its sigmoid gate; tiny and small only) and gpt-oss
/// (gpt-oss: gpt-oss-20b's layout, attention sinks, alternating windows, YaRN, a biased router and
/// biased experts stored `[E, in, out]` with gate and up interleaved, a clamped SwiGLU; tiny and
/// small only).
enum class SynthArch { Dense, Hybrid, HybridMoe, Encoder, Windowed, Softcap, Mla, Moe, HybridMoe35, GptOss };

/// The sizes `make-model` writes: `tiny` (kilobytes, for tests), `small`, `0.1b`, `0.8b` (for the
/// hybrid, the Qwen3.5-0.8B text model's shape).
enum class SynthSize { Tiny, Small, B01, B08 };

/// The command-line spelling (`hybrid-moe`, `0.1b`) → value, or nothing.
std::optional<SynthArch> parse_synth_arch(std::string_view s);
std::optional<SynthSize> parse_synth_size(std::string_view s);
std::string_view name(SynthArch a);
std::string_view name(SynthSize s);

/// What to write.
struct SynthOptions {
    SynthArch arch = SynthArch::Dense; ///< for make_model
    SynthSize size = SynthSize::Tiny;  ///< for make_model
    std::uint64_t seed = 0;
    Dtype dtype = Dtype::BF16; ///< BF16 or F32 (others are refused)
    unsigned shards = 1;       ///< 1: model.safetensors; more: shards and an index
    unsigned threads = 2;      ///< workers filling tensors
    bool replace = false;      ///< replace an existing output directory
};

/// The config.json of a synthetic checkpoint (what transformers writes for that model type). The
/// windowed, softcap and mla architectures come in tiny, small and 0.1b; 0.8b of them is a
/// cardsim::Error.
boost::json::object synth_config(SynthArch arch, SynthSize size);

/// The value of element `i` of tensor `t` in a checkpoint of `seed`, before rounding to its dtype:
/// approximately normal (Irwin–Hall of four 16-bit uniforms from a counter-based hash of seed,
/// name and index) scaled for its role: projections 1/√fan_in, embeddings 1/√width, norms about 1
/// (zero-centred about 0) with one channel in 64 about 4, biases 0.02, conv kernels 1/√K, A_log
/// log U(1, 16), dt_bias the inverse softplus of a log-uniform time step in [0.001, 0.1].
double synth_value(const TensorSpec& t, std::uint64_t seed, std::size_t i);

/// The sizes of published models `make-model --shapes-only` writes the config.json of: dense and
/// hybrid 1.7b .. 32b; with experts 30b-a3b, 235b-a22b (moe), 80b-a3b (hybrid-moe), 35b-a3b and
/// 122b-a10b (hybrid-moe35), 20b and 120b (gpt-oss).
enum class PublishedSize { B1_7, B4, B8, B14, B32, A3B30, A22B235, A3B80, A3B35, A10B122, Oss20, Oss120 };

/// `1.7b`, `4b`, `8b`, `14b`, `32b`, `30b-a3b`, `235b-a22b`, `80b-a3b`, `35b-a3b`, `122b-a10b`,
/// `20b`, `120b` → value, or nothing.
std::optional<PublishedSize> parse_published_size(std::string_view s);
std::string_view name(PublishedSize s);

/// A published model: its Hugging Face name and the config.json numbers it was published with.
struct Published {
    std::string name; ///< e.g. `Qwen/Qwen3-8B`
    boost::json::object config;
};

/// The published model of `arch` at `size`: dense is Qwen3 (Qwen3-1.7B, -4B, -8B, -14B, -32B);
/// hybrid is the Qwen3.5 text model nearest the size (4b Qwen3.5-4B, 8b Qwen3.5-9B, 32b
/// Qwen3.5-27B); moe is Qwen3-30B-A3B and Qwen3-235B-A22B, hybrid-moe Qwen3-Next-80B-A3B,
/// hybrid-moe35 Qwen3.5-35B-A3B and Qwen3.5-122B-A10B, gpt-oss gpt-oss-20b and gpt-oss-120b. Every
/// shape number is the published
/// config.json's (models/README.md names the sources). A size with no published model of the
/// architecture (hybrid 1.7b and 14b, an expert size of another architecture, any size of the
/// other architectures) is a cardsim::Error naming the ones there are.
Published published_model(SynthArch arch, PublishedSize size);

/// Writes `config` (which `parse_config` must accept) as `dir/config.json` alone: a shapes-only
/// checkpoint. Atomic; an existing `dir` is an error unless `replace` (then only its config.json is
/// replaced). Throws cardsim::Error naming the path.
void write_config_only(const boost::json::object& config, const std::filesystem::path& dir, bool replace);

/// What was written.
struct SynthResult {
    ModelSpec spec;
    std::size_t parameters = 0;
    std::size_t bytes = 0; ///< of the safetensors files
    std::vector<std::filesystem::path> files;
};

/// Writes the checkpoint of `options` into `dir`: into a temporary directory beside it, renamed onto
/// `dir` when complete. An existing `dir` is an error unless `options.replace`. Throws
/// cardsim::Error naming the path.
SynthResult make_model(const SynthOptions& options, const std::filesystem::path& dir);

/// Writes a checkpoint of any config the recognisers know (`parse_config` must accept it): that
/// config.json, and every tensor `expected_tensors` lists with `synth_value`s of `options.seed`, in
/// `options.dtype`, over `options.shards` files. `make_model` is this with `synth_config`; tests use
/// it for the variants make-model does not write (qwen2, llama, sliding windows, biases).
SynthResult write_synthetic(const boost::json::object& config, const SynthOptions& options,
                            const std::filesystem::path& dir);

} // namespace cardsim::models
