#include "traces/calibration.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace cardsim::traces {
namespace {

/// One measured command: its work and its cycles.
struct Sample {
    double work, cycles;
};

Residual residual(const std::vector<Sample>& s, std::uint32_t latency, std::uint32_t width) {
    Residual r;
    for (const auto& x : s) {
        const double model = double(model_cycles(std::uint64_t(x.work), latency, width));
        const double e = std::abs(model - x.cycles) / std::max(1.0, x.cycles);
        r.mean += e / double(s.size());
        r.max = std::max(r.max, e);
    }
    return r;
}

/// The latency that centres the residuals of `width`: the mean of measured - ceil(work / width),
/// rounded, at least 0.
std::uint32_t centred_latency(const std::vector<Sample>& s, std::uint32_t width) {
    double sum = 0;
    for (const auto& x : s)
        sum += x.cycles - double(model_cycles(std::uint64_t(x.work), 0, width));
    return std::uint32_t(std::max(0.0, std::round(sum / double(s.size()))));
}

} // namespace

std::uint64_t model_cycles(std::uint64_t work, std::uint32_t latency, std::uint32_t width) {
    return latency + std::max<std::uint64_t>(1, (work + width - 1) / std::max<std::uint32_t>(width, 1));
}

std::vector<KindFit> calibrate(const Trace& t, const card::CardConfig& config) {
    std::map<std::uint64_t, const Record*> by_index;
    for (const auto& r : t.records)
        by_index[r.index] = &r;
    std::map<card::UnitKind, std::vector<Sample>> samples;
    for (const auto& m : measured_of(t.header)) {
        auto r = by_index.find(m.index);
        if (r == by_index.end())
            throw Error(
                fmt::format("meta measured names command {}, which the trace has no cmd line for", m.index));
        auto kind = card::parse_unit_kind(r->second->unit);
        if (!kind)
            throw Error(fmt::format("command {}: unit `{}` is not a unit kind of the card", m.index,
                                    r->second->unit));
        samples[*kind].push_back({double(m.work), double(m.cycles)});
    }
    if (samples.empty())
        throw Error("the trace has no measured command (no `meta measured=` line; `cardsim run --rtl matvec "
                    "--trace F` writes one)");
    std::vector<KindFit> fits;
    for (const auto& [kind, s] : samples) {
        KindFit f;
        f.kind = kind;
        f.commands = s.size();
        f.config_latency = config.units[kind].latency;
        f.config_width = config.lanes(kind);
        f.before = residual(s, f.config_latency, f.config_width);
        double mw = 0, mc = 0;
        for (const auto& x : s)
            mw += x.work / double(s.size()), mc += x.cycles / double(s.size());
        double sww = 0, swc = 0;
        for (const auto& x : s)
            sww += (x.work - mw) * (x.work - mw), swc += (x.work - mw) * (x.cycles - mc);
        f.spread = sww > 0;
        double slope = 0;
        if (f.spread)
            slope = swc / sww;
        else if (mc > f.config_latency)
            slope = (mc - f.config_latency) / mw;
        if (!(slope > 0))
            throw Error(fmt::format("{}: the measured cycles do not grow with the work (slope {:.3g}), so no "
                                    "width fits them",
                                    card::name(kind), slope));
        f.width = std::uint32_t(std::max(1.0, std::round(1.0 / slope)));
        f.latency = f.spread ? centred_latency(s, f.width) : f.config_latency;
        f.after = residual(s, f.latency, f.width);
        fits.push_back(f);
    }
    return fits;
}

} // namespace cardsim::traces
