#include "engine/fit/resources.hpp"

#include <cmath>

namespace cardsim::fit {

using card::UnitKind;
using numerics::ActScaling;
using numerics::AttentionMath;
using numerics::CacheFormat;
using numerics::StateFormat;
using numerics::Words;

namespace {

std::uint64_t blocks(double amount) {
    return amount <= 0 ? 0 : static_cast<std::uint64_t>(std::ceil(amount - 1e-9));
}

} // namespace

Resources unit_resources(const card::CardConfig& config, UnitKind kind) {
    const auto& cost = config.fit[kind];
    const auto& knobs = config.fit.knobs;
    const auto& n = config.numerics;
    const double l = double(config.lanes(kind));
    double dsp_per_lane = cost.dsp_per_lane, alm_per_lane = cost.alm_per_lane, alm = cost.alm_fixed;
    switch (kind) {
    case UnitKind::Matvec:
        if (n.scaling == ActScaling::PerBlock) {
            dsp_per_lane *= knobs.wide_dsp_factor;
            alm_per_lane *= knobs.wide_alm_factor;
        }
        if (n.activations == Words::Two) alm += knobs.two_word_alms;
        break;
    case UnitKind::Attention:
        if (n.attention == AttentionMath::Array) dsp_per_lane = knobs.array_dsp_per_lane;
        if (n.cache != CacheFormat::F16) alm += knobs.int8_cache_alms;
        break;
    case UnitKind::CacheAppend:
        if (n.cache != CacheFormat::F16) alm += knobs.int8_cache_alms;
        if (n.cache == CacheFormat::Int8Hadamard) alm += knobs.hadamard_alms;
        break;
    case UnitKind::Delta:
        if (n.state == StateFormat::F16) alm_per_lane += knobs.f16_state_alm_per_lane;
        break;
    default:
        break;
    }
    return Resources{blocks(l * dsp_per_lane), blocks(l * alm_per_lane + alm), blocks(cost.m20k_fixed)};
}

std::uint64_t arena_m20ks(const card::CardConfig& config) {
    const std::uint64_t bits = config.fit.device.m20k_bits;
    return (config.sram.bytes * 8 + bits - 1) / bits;
}

ResourceTable resources(const card::CardConfig& config) {
    ResourceTable t;
    for (auto kind : card::all_unit_kinds) {
        const auto& spec = config.units[kind];
        if (!spec.present()) continue;
        auto one = unit_resources(config, kind);
        Resources all{one.dsps * spec.count, one.alms * spec.count, one.m20ks * spec.count};
        t.rows.push_back(ResourceRow{card::name(kind), spec.count, config.lanes(kind), all});
        t.total += all;
    }
    const auto& d = config.fit.device;
    for (auto row : {ResourceRow{"arena", 0, 0, Resources{0, 0, arena_m20ks(config)}},
                     ResourceRow{"shell", 0, 0, Resources{d.shell_dsps, d.shell_alms, d.shell_m20ks}}}) {
        t.rows.push_back(row);
        t.total += row.resources;
    }
    t.device = Resources{d.dsps, d.alms, d.m20ks};
    return t;
}

} // namespace cardsim::fit
