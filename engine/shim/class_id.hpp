#pragma once
// The fusion classes of the shared optimizer's table: every class a backend answers for, whether or
// not a graph of ours can form it, so the table is complete.

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

namespace cardsim::shim {

/// One class of fused work the shared optimizer may ask a backend to run as one unit.
enum class ClassId {
    // what the card runs as one unit
    MergedQkv,
    ConvBiasSilu,
    GdnGating,
    GluActMul,
    // norms
    NormWeight,
    AddNorm,
    NormThenAdd,
    NormScale,
    NormWeightOffset,
    DualNorm,
    GatedNorm,
    EmbedNorm,
    // epilogues and launch shapes
    GemvNormEpilogue,
    PrefillNormEpilogues,
    AttnResidualNorm,
    RecomputeFanout,
    ElementwiseChains,
    ElementwiseRegions,
    // rotation and cache
    QkNormRope,
    QkNormRopeKvAppend,
    RopeKvAppend,
    RopeQkOneLaunch,
    QkNormRopeGateSplit,
    QkvHeadEpilogue,
    HorizontalNormRopeInsert,
    CrossLayerLaunch,
    // Gated-DeltaNet
    ConvParts,
    ConvSiluL2norm,
    GdnGateProjections,
    GdnInputEpilogue,
    GdnPostConvPrep,
    GdnDecodeWhole,
    // MLP and matvec
    GemvGateUpGlu,
    MergedGateUp,
    GemmDequantInkernel,
    FusedSampling,
    LastLayerRows,
    // quantisation
    NormQuant,
    AddNormQuant,
    GluActMulQuant,
    ElementwiseQuant,
    GdnOutputQuant,
    GemvQuant,
    AttnOutputQuant,
    GdnStep,
    AttnOutputGate,
    RowWriteQuant,
    // matvec with bias or scale
    GemmBias,
    GemmScale,
    AffineInputFold,
    EmbedScale,
    // multi-head latent attention
    Mla,
    MlaPrologue,
    MlaUnabsorbInFold,
    // experts
    RouterTopk,
    MoeTokenSort,
    MoeGateUpAct,
    MoeDownCombine,
    SharedExpertFusion,
    MoeGatherInOperand,
    MoeDeferredFinalize,
    MoeDirectPairs,
    GroupedTopk,
    RouterSharedGateMerge,
    MaskedExpertActivation,
    // attention kernels and variants
    FlashDecode,
    FlashPrefill,
    AttnLseMerge,
    AttnGqaRowPacking,
    AttentionVariantsInline,
    Softcap,
    MixedBatchAttention,
    SparseAttention,
    // partial slots
    StridedRead,
    RowWrite,
    JoinInPlace,
    StridedValues,
    // the rest
    ReluSqr,
    Sampling,
    KvCacheQuant,
    HadamardRotation,
    CompensatedResidual,
    HostResidentKv,
    PersistentLayerMegakernel,
    CudaGraphs,
    AllreduceNorm,
};

/// How many classes the table has.
inline constexpr std::size_t class_count = static_cast<std::size_t>(ClassId::AllreduceNorm) + 1;

/// The class's name as the shared table spells it (`merged_qkv`, `conv_bias_silu`).
std::string_view name(ClassId c);

/// The class spelled `s`, if any.
std::optional<ClassId> class_named(std::string_view s);

/// Every class, in declaration order.
std::span<const ClassId> all_classes();

} // namespace cardsim::shim
