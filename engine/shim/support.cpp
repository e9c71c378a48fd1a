#include "engine/shim/support.hpp"

#include <fmt/core.h>

#include <vector>

namespace cardsim::shim {
namespace {

using program::Unit;

/// "a, b or c" of the words in `w`.
std::string either(const std::vector<std::string_view>& w) {
    std::string s;
    for (std::size_t i = 0; i < w.size(); ++i) {
        if (i) s += i + 1 == w.size() ? " or " : ", ";
        s += w[i];
    }
    return s;
}

/// Native when the card has `u`, else refused for lacking it.
Support unit_or_refuse(const Capabilities& caps, Unit u) {
    if (caps.has(u)) return Native{};
    return Refuse{fmt::format("the engine has no {} unit", card::name(u))};
}

/// The matvec classes: Native when the matvec has every feature the class needs.
Support matvec(const Capabilities& caps, bool needs_bias, bool needs_scale) {
    if ((!needs_bias || caps.matvec_bias) && (!needs_scale || caps.matvec_scale)) return Native{};
    std::vector<std::string> missing;
    if (!caps.matvec_bias) missing.push_back("adds no bias");
    if (!caps.matvec_scale) missing.push_back("scales by no factor");
    return Refuse{"the engine's matvec unit " +
                  (missing.size() == 2 ? missing[0] + " and " + missing[1] : missing[0])};
}

/// The attention variant classes: Native when the attention has every feature the class needs;
/// a refusal names every feature the attention lacks.
Support attention(const Capabilities& caps, bool mask, bool window, bool sinks, bool softcap) {
    if ((!mask || caps.attention_mask) && (!window || caps.attention_window) &&
        (!sinks || caps.attention_sinks) && (!softcap || caps.attention_softcap))
        return Native{};
    std::vector<std::string_view> missing;
    if (!caps.attention_mask) missing.push_back("mask");
    if (!caps.attention_window) missing.push_back("window");
    if (!caps.attention_sinks) missing.push_back("sink");
    if (!caps.attention_softcap) missing.push_back("soft cap");
    return Refuse{"the engine's attention takes no " + either(missing)};
}

} // namespace

Support attention_variants(const Capabilities& caps, bool window, bool sinks, bool softcap) {
    std::vector<std::string_view> missing;
    if (window && !caps.attention_window) missing.push_back("window");
    if (sinks && !caps.attention_sinks) missing.push_back("sink");
    if (softcap && !caps.attention_softcap) missing.push_back("soft cap");
    if (missing.empty()) return Native{};
    return Refuse{"the engine's attention takes no " + either(missing)};
}

Support supports(ClassId c, const Capabilities& caps) {
    using enum ClassId;
    switch (c) {
    case MergedQkv:
        return unit_or_refuse(caps, Unit::Matvec);
    case ConvBiasSilu:
        return unit_or_refuse(caps, Unit::Conv);
    case GdnGating:
        return unit_or_refuse(caps, Unit::Gates);
    case GluActMul:
        return unit_or_refuse(caps, Unit::SigmoidGate);
    case NormWeight:
    case AddNorm:
    case NormThenAdd:
    case NormScale:
    case NormWeightOffset:
    case DualNorm:
    case GatedNorm:
    case EmbedNorm:
    case GemvNormEpilogue:
    case PrefillNormEpilogues:
    case AttnResidualNorm:
    case RecomputeFanout:
    case ElementwiseChains:
    case ElementwiseRegions:
    case QkNormRope:
    case QkNormRopeKvAppend:
    case RopeKvAppend:
    case RopeQkOneLaunch:
    case QkNormRopeGateSplit:
    case QkvHeadEpilogue:
    case HorizontalNormRopeInsert:
    case CrossLayerLaunch:
    case ConvParts:
    case ConvSiluL2norm:
    case GdnGateProjections:
    case GdnInputEpilogue:
    case GdnPostConvPrep:
    case GdnDecodeWhole:
    case GemvGateUpGlu:
    case MergedGateUp:
    case GemmDequantInkernel:
    case FusedSampling:
    case LastLayerRows:
    case NormQuant:
    case AddNormQuant:
    case GluActMulQuant:
    case ElementwiseQuant:
    case GdnOutputQuant:
    case GemvQuant:
    case AttnOutputQuant:
    case GdnStep:
    case AttnOutputGate:
    case RowWriteQuant:
        return Decompose{};
    case GemmBias:
        return matvec(caps, true, false);
    case GemmScale:
        return matvec(caps, false, true);
    case AffineInputFold:
        return matvec(caps, true, true);
    case EmbedScale:
        if (caps.embedding_scale) return Native{};
        return Refuse{"the engine reads its embedding unscaled"};
    case Mla:
    case MlaPrologue:
    case MlaUnabsorbInFold:
        if (caps.mla) return Native{};
        return Refuse{std::string(no_unit) + "multi-head latent attention"};
    case RouterTopk:
    case MoeTokenSort:
    case MoeGateUpAct:
    case MoeDownCombine:
    case SharedExpertFusion:
    case MoeGatherInOperand:
    case MoeDeferredFinalize:
    case MoeDirectPairs:
    case GroupedTopk:
    case RouterSharedGateMerge:
    case MaskedExpertActivation:
        if (caps.experts) return Native{};
        return Refuse{std::string(no_unit) + "experts"};
    case FlashDecode:
    case FlashPrefill:
    case AttnLseMerge:
    case AttnGqaRowPacking:
        return Refuse{"the engine attends one query over its cache in its attention unit"};
    case AttentionVariantsInline:
        return attention(caps, false, true, true, true);
    case Softcap:
        return attention(caps, false, false, false, true);
    case MixedBatchAttention:
    case SparseAttention:
        return attention(caps, true, false, false, false);
    case StridedRead:
    case RowWrite:
    case JoinInPlace:
    case StridedValues:
        return Refuse{"the engine's units read and write whole slots"};
    case ReluSqr:
        if (caps.matvec_relu) return Decompose{};
        return Refuse{"the engine has no ReLU unit"};
    case Sampling:
        return Refuse{"the engine picks the next token by arg-max"};
    case KvCacheQuant:
    case HadamardRotation:
        return Refuse{"the engine's cache format is its numerics', not a fusion"};
    case CompensatedResidual:
        return Refuse{"the engine sums its residual uncompensated"};
    case HostResidentKv:
        return Refuse{"the engine keeps its caches in its card's memory"};
    case PersistentLayerMegakernel:
    case CudaGraphs:
        return Refuse{"the engine runs a program of commands, not kernel launches"};
    case AllreduceNorm:
        // Tensor parallel: the all-reduce runs as the network unit's sends and receives, the
        // residual add and the norm after it as commands of their own.
        if (caps.cards > 1) return Decompose{};
        return Refuse{"the engine runs on one card"};
    }
    return Refuse{"unknown class"};
}

std::string to_string(const Support& s) {
    if (std::holds_alternative<Native>(s)) return "Native";
    if (std::holds_alternative<Decompose>(s)) return "Decompose";
    return "Refuse: " + std::get<Refuse>(s).reason;
}

} // namespace cardsim::shim
