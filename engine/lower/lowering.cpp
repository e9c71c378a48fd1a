// The lowering pass: refusals, fusion groups to commands, probes and output copies (lowering.hpp).

#include "engine/lower/lowering.hpp"

#include "engine/lower/dependencies.hpp"
#include "engine/shim/check.hpp"

#include <algorithm>

namespace cardsim::lower::detail {

Compiled Lowering::run() {
    // A cache's bytes are positions x heads x row bytes: bounded so that no size wraps.
    if (o_.max_positions > Options::max_positions_limit)
        throw Error(fmt::format("max positions {}: past 2^31, more than any cache can hold (--max-positions)",
                                o_.max_positions));
    refuse_what_the_card_cannot_run();
    out_.options = o_;
    out_.layout = layout(g_, o_.bucket);
    if (auto why = arena_refusal(g_, o_.bucket, t_.sram_bytes)) throw Refusal(*why);
    for (auto& p : o_.probes)
        if (auto problem = check(g_, p)) throw Error("cannot observe a value: " + *problem);
    place_states();
    place_io();
    auto fusion = shim::fuse(g_, t_.caps);
    const auto& st = o_.stage;
    // Router numbers are the graph's (the Moe ops before this card's part count), so every card of
    // a pipeline names a Moe layer as one card would, and a step's routing is one table for them all.
    if (st)
        routers_ = std::uint64_t(
            std::count_if(g_.ops.begin(), g_.ops.begin() + std::ptrdiff_t(st->first_op),
                          [](const auto& op) { return std::holds_alternative<graph::Moe>(op); }));
    if (st)
        for (auto v : st->receives)
            put<slots::Recv>(g_.ops.size(), {.out = on(arena(v))}, {.peer = st->from});
    for (auto& grp : fusion.groups) {
        if (st) { // one card's part: the group's ops in it (a group run as one command is never cut)
            auto mine = [&](std::size_t i) { return i >= st->first_op && i < st->end_op; };
            const auto in = std::count_if(grp.ops.begin(), grp.ops.end(), mine);
            if (in == 0) continue;
            if (std::size_t(in) < grp.ops.size()) {
                if (grp.cls && std::holds_alternative<shim::Native>(shim::supports(*grp.cls, t_.caps)) &&
                    (*grp.cls == shim::ClassId::MergedQkv || *grp.cls == shim::ClassId::ConvBiasSilu))
                    throw Error(fmt::format("card {}'s part (ops {} .. {}) cuts a group the card runs as one "
                                            "command (op {})",
                                            st->card, st->first_op, st->end_op, grp.ops.front()));
                for (auto i : grp.ops)
                    if (mine(i)) {
                        single(i);
                        copy_probes(i, {});
                    }
                continue;
            }
        }
        emit(grp);
    }
    if (st)
        for (auto v : st->sends)
            put<slots::Send>(g_.ops.size(), {.x = on(arena(v))}, {.peer = st->to});
    if (!st || st->outputs) copy_outputs();
    add_dependencies(out_.program);
    map_regions(); // refuses a program over the card's DDR before any weight is read
    run_jobs();    // and the image's digest
    describe_host();
    return std::move(out_);
}

void Lowering::refuse_what_the_card_cannot_run() {
    if (auto problem = check(g_)) throw Error("the graph is malformed: " + *problem);
    auto report = shim::check_model(g_, t_.caps);
    if (report.runs()) return;
    std::string why = "the card refuses this model:";
    for (auto& r : report.refusals)
        why += "\n  " + r.text();
    throw Error(why);
}

void Lowering::need_decode_rows(std::size_t i) const {
    if (o_.slots) return; // each row names its store sequence
    if (o_.bucket.seqs == 0 || o_.bucket.tokens % o_.bucket.seqs != 0)
        throw Error(
            fmt::format("op {} ({}) reads a cache or state: a step takes the same number of tokens of "
                        "every sequence, and the bucket has {} tokens for {} sequences",
                        i, kind(g_.ops[i]), o_.bucket.tokens, o_.bucket.seqs));
}

void Lowering::emit(const shim::Group& grp) {
    bool native = grp.cls && std::holds_alternative<shim::Native>(shim::supports(*grp.cls, t_.caps));
    bool merged = native && (*grp.cls == shim::ClassId::MergedQkv || *grp.cls == shim::ClassId::ConvBiasSilu);
    if (merged) {
        if (*grp.cls == shim::ClassId::MergedQkv)
            merged_matvec(grp);
        else
            conv(grp.ops[0], &std::get<Silu>(g_.ops[grp.ops[1]]));
        for (std::size_t k = 0; k < grp.ops.size(); ++k)
            copy_probes(grp.ops[k], std::span(grp.ops).subspan(k + 1));
        return;
    }
    for (auto i : grp.ops) {
        single(i);
        copy_probes(i, {});
    }
}

void Lowering::single(std::size_t i) {
    std::visit([&](const auto& o) { emit_op(i, o); }, g_.ops[i]);
}

void Lowering::copy_probes(std::size_t op, std::span<const std::size_t> same_command) {
    auto& m = out_.io;
    for (std::size_t k = 0; k < m.probes.size(); ++k) {
        auto& p = m.probes[k];
        if (p.after != op) continue;
        for (auto later : same_command) {
            auto w = uses(g_.ops[later]).writes;
            if (std::find(w.begin(), w.end(), p.value) != w.end())
                throw Error(fmt::format("cannot observe {} after op {}: op {} ({}) runs in the same command "
                                        "and writes it again",
                                        g_.names[p.value.id], p.after, later, kind(g_.ops[later])));
        }
        put<slots::Copy>(g_.ops.size(),
                         {.src = on(arena(p.value)), .dst = on(m.outputs[m.graph_outputs() + k].second)}, {});
    }
}

void Lowering::copy_outputs() {
    auto& m = out_.io;
    for (std::size_t k = 0; k < m.graph_outputs(); ++k) {
        auto& [v, place] = m.outputs[k];
        put<slots::Copy>(g_.ops.size(), {.src = on(arena(v)), .dst = on(place)}, {});
    }
}

} // namespace cardsim::lower::detail
