#pragma once
// The card config's schema: every key, its type and range, in one place. `describe(v, config)`
// walks the fields with a visitor (config_reader.hpp's Reader fills them, Writer prints them).
// configs/d5005.toml documents each key; keep the two in the same order.

#include "engine/card/card_config.hpp"

#include <array>
#include <utility>

namespace cardsim::card {

inline constexpr std::array<std::pair<PagePolicy, std::string_view>, 2> page_policy_names{
    {{PagePolicy::Open, "open"}, {PagePolicy::Closed, "closed"}}};
inline constexpr std::array<std::pair<SchedulerKind, std::string_view>, 2> scheduler_kind_names{
    {{SchedulerKind::FrFcfs, "frfcfs"}, {SchedulerKind::Fcfs, "fcfs"}}};
inline constexpr std::array<std::pair<ScaleKind, std::string_view>, 2> scale_kind_names{
    {{ScaleKind::E8M0, "e8m0"}, {ScaleKind::F16, "f16"}}};
inline constexpr std::array<std::pair<Topology, std::string_view>, 3> topology_names{
    {{Topology::Ring, "ring"}, {Topology::Pairs, "pairs"}, {Topology::Switch, "switch"}}};
inline constexpr std::array<std::pair<Exchange, std::string_view>, 2> exchange_names{
    {{Exchange::Exact, "exact"}, {Exchange::F32, "f32"}}};

/// Whether visitor `v` leaves the router's sections out of `c`: a writer does (its
/// `omit_absent_router`) when the card has no experts (`capabilities.experts` false), since the
/// router's fields then change nothing: a card without experts prints, and digests, as before.
template <class V, class C>
bool omits_router(const V& v, const C& c) {
    if constexpr (requires { v.omit_absent_router; })
        return v.omit_absent_router && !c.capabilities.experts;
    else
        return false;
}

/// Walks every field of `c` (a CardConfig, const or not) with visitor `v`.
template <class V, class C>
void describe(V& v, C& c) {
    v.label("name", c.name);
    v.section("clock", [&] { v.real("kernel_mhz", c.clock.kernel_mhz, 1.0, 2000.0); });
    v.section("ddr", [&] {
        auto& d = c.ddr;
        v.integer("channels", d.channels, 1, 64);
        v.integer("capacity_mib", d.capacity_mib, 1, 1u << 20);
        v.one_of("data_bits", d.data_bits, {8, 16, 32, 64, 128});
        v.integer("speed_mts", d.speed_mts, 400, 12800);
        v.integer("interleave_bytes", d.interleave_bytes, 64, 1u << 30);
        v.one_of("port_bits", d.port_bits, {64, 128, 256, 512, 1024, 2048});
        v.section("geometry", [&] {
            v.integer("ranks", d.geometry.ranks, 1, 4);
            v.integer("bank_groups", d.geometry.bank_groups, 1, 8);
            v.integer("banks_per_group", d.geometry.banks_per_group, 1, 16);
            v.integer("row_bytes", d.geometry.row_bytes, 64, 65536);
        });
        v.section("timing", [&] {
            auto& t = d.timing;
            v.derived_real("tck_ps", 50.0, 10000.0);
            v.integer("cl", t.cl, 1, 255);
            v.integer("cwl", t.cwl, 1, 255);
            v.integer("trcd", t.trcd, 1, 255);
            v.integer("trp", t.trp, 1, 255);
            v.integer("tras", t.tras, 1, 1023);
            v.integer("tccd_s", t.tccd_s, 1, 63);
            v.integer("tccd_l", t.tccd_l, 1, 63);
            v.integer("trrd_s", t.trrd_s, 1, 63);
            v.integer("trrd_l", t.trrd_l, 1, 63);
            v.integer("tfaw", t.tfaw, 1, 255);
            v.integer("twtr_s", t.twtr_s, 1, 63);
            v.integer("twtr_l", t.twtr_l, 1, 63);
            v.integer("trtw", t.trtw, 1, 63);
            v.integer("twr", t.twr, 1, 255);
            v.integer("trtp", t.trtp, 1, 63);
            v.integer("trfc", t.trfc, 1, 65535);
            v.integer("trefi", t.trefi, 2, 1048575);
            v.integer("trtrs", t.trtrs, 0, 63);
            v.one_of("burst_length", t.burst_length, {2, 4, 8, 16});
        });
        v.section("controller", [&] {
            v.text("address_map", d.controller.address_map);
            v.choice("page_policy", d.controller.page_policy, page_policy_names);
            v.integer("write_queue", d.controller.write_queue, 0, 4096);
            v.choice("scheduler", d.controller.scheduler, scheduler_kind_names);
            v.integer("bank_queue_depth", d.controller.bank_queue_depth, 1, 256);
            v.integer("starvation_limit", d.controller.starvation_limit, 0, 1u << 20);
            v.later_flag("stagger_row_switches", d.controller.stagger_row_switches);
            v.integer("write_high_watermark", d.controller.write_high_watermark, 0, 4096);
            v.integer("write_low_watermark", d.controller.write_low_watermark, 0, 4096);
        });
    });
    v.section("sram", [&] {
        v.integer("bytes", c.sram.bytes, 1, std::uint64_t{1} << 34);
        v.integer("latency", c.sram.latency, 0, 1000);
        v.integer("bytes_per_cycle", c.sram.bytes_per_cycle, 1, 1u << 20);
    });
    v.section("command_processor",
              [&] { v.integer("issue_cycles", c.command_processor.issue_cycles, 1, 1000); });
    v.section("units", [&] {
        for (auto kind : all_unit_kinds) {
            if (kind == UnitKind::Router && omits_router(v, c)) continue;
            v.section(name(kind), [&] {
                auto& u = c.units[kind];
                v.integer("count", u.count, 0, 1024);
                v.integer("width", u.width, 1, 1u << 24);
                v.integer("latency", u.latency, 0, 1u << 20);
                if (kind == UnitKind::Matvec) {
                    v.flag("bias", c.units.matvec.bias);
                    v.flag("scale", c.units.matvec.scale);
                } else if (kind == UnitKind::Attention) {
                    v.flag("window", c.units.attention.window);
                    v.flag("sinks", c.units.attention.sinks);
                    v.flag("softcap", c.units.attention.softcap);
                    v.integer("array_width", c.units.attention.array_width, 1, 1u << 24);
                } else if (kind == UnitKind::Embed) {
                    v.flag("scale", c.units.embed.scale);
                } else if (kind == UnitKind::Router) {
                    v.integer("resolve_latency", c.units.router.resolve_latency, 0, 1u << 20);
                } else if (kind == UnitKind::Rotation) {
                    v.later_flag("yarn", c.units.rotation.yarn);
                } else if (kind == UnitKind::SiluMul) {
                    v.later_flag("clamp", c.units.silu_mul.clamp);
                }
            });
        }
    });
    v.section("capabilities", [&] {
        v.flag("relu", c.capabilities.relu);
        v.flag("experts", c.capabilities.experts);
        v.retired("cards", "system.cards", 1);
    });
    v.section("numerics", [&] {
        v.knob("scaling", c.numerics);
        v.knob("activations", c.numerics);
        v.knob("state", c.numerics);
        v.knob("cache", c.numerics);
        v.knob("attention", c.numerics);
    });
    v.section("weights", [&] {
        v.one_of("code_bits", c.weights.code_bits, {4, 8});
        v.integer("block_size", c.weights.block_size, 32, 1024);
        v.group_size("group_size", c.weights.group_size);
        v.choice("scale", c.weights.scale, scale_kind_names);
    });
    v.system("system", [&] {
        v.integer("cards", c.system.cards, 1, 64);
        v.choice("topology", c.system.topology, topology_names);
        v.choice("exchange", c.system.exchange, exchange_names);
    });
    v.system("link", [&] {
        auto& l = c.link;
        v.real("gbps", l.gbps, 0.001, 10000.0);
        v.real("latency_ns", l.latency_ns, 0.0, 1.0e6);
        v.integer("ports", l.ports, 1, 16);
        v.integer("frame_payload_bytes", l.frame_payload_bytes, 64, 1u << 20);
        v.integer("frame_overhead_bytes", l.frame_overhead_bytes, 0, 4096);
        v.real("switch_latency_ns", l.switch_latency_ns, 0.0, 1.0e6);
    });
    v.estimates("fit", [&] {
        auto& f = c.fit;
        v.section("device", [&] {
            v.text("name", f.device.name);
            v.integer("alms", f.device.alms, 1, std::uint64_t{1} << 32);
            v.integer("dsps", f.device.dsps, 1, 1u << 24);
            v.integer("m20ks", f.device.m20ks, 1, 1u << 24);
            v.integer("m20k_bits", f.device.m20k_bits, 1, 1u << 20);
            v.integer("shell_alms", f.device.shell_alms, 0, std::uint64_t{1} << 32);
            v.integer("shell_dsps", f.device.shell_dsps, 0, 1u << 24);
            v.integer("shell_m20ks", f.device.shell_m20ks, 0, 1u << 24);
            v.real("board_watts", f.device.board_watts, 1.0, 10000.0);
        });
        v.section("units", [&] {
            for (auto kind : all_unit_kinds)
                if (kind != UnitKind::Router || !omits_router(v, c))
                    v.section(name(kind), [&] {
                        auto& u = f.units[static_cast<std::size_t>(kind)];
                        v.real("dsp_per_lane", u.dsp_per_lane, 0.0, 1024.0);
                        v.real("alm_per_lane", u.alm_per_lane, 0.0, 1.0e6);
                        v.real("alm_fixed", u.alm_fixed, 0.0, 1.0e7);
                        v.real("m20k_fixed", u.m20k_fixed, 0.0, 1.0e6);
                        v.flag("reduction", u.reduction);
                    });
        });
        v.section("knobs", [&] {
            auto& k = f.knobs;
            v.real("wide_dsp_factor", k.wide_dsp_factor, 1.0, 16.0);
            v.real("wide_alm_factor", k.wide_alm_factor, 1.0, 16.0);
            v.real("two_word_alms", k.two_word_alms, 0.0, 1.0e7);
            v.real("array_dsp_per_lane", k.array_dsp_per_lane, 0.0, 1024.0);
            v.real("f16_state_alm_per_lane", k.f16_state_alm_per_lane, 0.0, 1.0e6);
            v.real("int8_cache_alms", k.int8_cache_alms, 0.0, 1.0e7);
            v.real("hadamard_alms", k.hadamard_alms, 0.0, 1.0e7);
        });
        v.section("clock", [&] {
            v.real("base_mhz", f.clock.base_mhz, 1.0, 2000.0);
            v.real("knee", f.clock.knee, 0.0, 1.0);
            v.real("full_mhz", f.clock.full_mhz, 1.0, 2000.0);
            v.integer("levels_per_stage", f.clock.levels_per_stage, 1, 64);
        });
        v.section("power", [&] {
            auto& p = f.power;
            v.real("static_watts", p.static_watts, 0.0, 10000.0);
            v.real("shell_watts", p.shell_watts, 0.0, 10000.0);
            v.real("dsp_uw_per_mhz", p.dsp_uw_per_mhz, 0.0, 1.0e6);
            v.real("m20k_uw_per_mhz", p.m20k_uw_per_mhz, 0.0, 1.0e6);
            v.real("alm_uw_per_mhz", p.alm_uw_per_mhz, 0.0, 1.0e6);
            v.real("ddr_background_watts", p.ddr_background_watts, 0.0, 1000.0);
            v.real("ddr_read_pj_per_byte", p.ddr_read_pj_per_byte, 0.0, 1.0e6);
            v.real("ddr_write_pj_per_byte", p.ddr_write_pj_per_byte, 0.0, 1.0e6);
        });
    });
}

} // namespace cardsim::card
