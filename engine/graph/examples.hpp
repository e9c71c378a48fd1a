#pragma once
// Graphs of given shapes with no checkpoint behind them: for layout benchmarks, the built-in
// `cardsim layout` listing and tests. Their weights are tensor indices counted from 0.

#include "engine/graph/graph.hpp"

namespace cardsim::graph {

/// The shape parameters of an example decoder.
struct DecoderShape {
    std::size_t layers = 64;
    std::size_t hidden = 4096;
    std::size_t heads = 32;
    std::size_t kv_heads = 8;
    std::size_t head_dim = 128;
    std::size_t intermediate = 12288;
    std::size_t vocab = 151936;
};

/// A dense decoder's decode step: per layer RMSNorm, q/k/v projections, QK norms, rotations, cache
/// appends, attention over the cache, output projection and residual add, then a SwiGLU MLP; a
/// final norm, the LM head and the arg-max.
Graph example_decoder(const DecoderShape& s);

/// The shape parameters of an example encoder (the seed's plan).
struct EncoderShape {
    std::size_t layers = 28;
    std::size_t hidden = 768;
    std::size_t heads = 12;
    std::size_t intermediate = 1152;
    std::size_t vocab = 50368;
    std::size_t global_every = 3;
    std::size_t window = 128;
};

/// A ModernBERT-style encoder with the seed's heads: embedding + LayerNorm, per layer a fused qkv
/// Gemm, Rope, Attention (global every `global_every` layers, else windowed), output Gemm
/// accumulated into the residual, LayerNorm, GeGlu MLP accumulated; then AddType, GatherMarkers,
/// a one-wide marker score and ActFeatures into a two-wide act head.
Graph example_encoder(const EncoderShape& s);

} // namespace cardsim::graph
