// `cardsim compile MODEL_DIR -o PROG`: the program file and its DDR image (PROG.ddr); with
// `--rows 1,2,4`, a program set for serving (engine/program/program_set.hpp) and its image.

#include "cli/card_options.hpp"
#include "cli/check_layers.hpp"
#include "cli/command.hpp"
#include "cli/decode_batch.hpp"
#include "cli/output_paths.hpp"
#include "cli/pack_cache_option.hpp"
#include "cli/plan_option.hpp"
#include "cli/shim_verdict.hpp"
#include "engine/error.hpp"
#include "engine/kernels/parallel.hpp"
#include "engine/lower/lower.hpp"
#include "engine/lower/pack_cache.hpp"
#include "engine/lower/plan.hpp"
#include "engine/program/image_file.hpp"
#include "engine/program/program_set.hpp"
#include "models/checkpoint_digest.hpp"
#include "models/model.hpp"
#include "sim/system/system.hpp"

#include <fmt/core.h>

#include <future>
#include <memory>

namespace cardsim::cli {
namespace {

/// `seqs=2,tokens=2,markers=0` into a bucket (decoders: tokens = seqs by default).
graph::Bucket parse_bucket(const std::string& text) {
    graph::Bucket b{1, 1, 0};
    bool tokens_given = false;
    std::size_t at = 0;
    while (at < text.size()) {
        auto end = text.find(',', at);
        auto part = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
        auto eq = part.find('=');
        std::size_t v = 0, used = 0;
        try {
            if (eq != std::string::npos) v = std::stoul(part.substr(eq + 1), &used);
        } catch (...) {
            used = 0;
        }
        auto key = part.substr(0, eq);
        if (eq == std::string::npos || used != part.size() - eq - 1 || (v == 0 && key != "markers"))
            throw Error(fmt::format(
                "--bucket: `{}` is not key=count (keys seqs, tokens, markers; counts positive)", part));
        if (key == "seqs")
            b.seqs = v;
        else if (key == "tokens")
            b.tokens = v, tokens_given = true;
        else if (key == "markers")
            b.markers = v;
        else
            throw Error(fmt::format("--bucket: unknown key `{}`, expected seqs, tokens or markers", key));
        if (end == std::string::npos) break;
        at = end + 1;
    }
    if (!tokens_given) b.tokens = b.seqs;
    return b;
}

/// `1,2,4,16` into the token rows of a set's buckets: positive, strictly increasing.
std::vector<std::size_t> parse_rows(const std::string& text) {
    std::vector<std::size_t> rows;
    std::size_t at = 0;
    while (true) {
        auto end = text.find(',', at);
        auto part = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
        std::size_t v = 0, used = 0;
        try {
            v = std::stoul(part, &used);
        } catch (...) {
            used = 0;
        }
        if (part.empty() || used != part.size() || v == 0 || part[0] == '-')
            throw Error(fmt::format("--rows {}: `{}` is not a positive count of token rows (expected e.g. "
                                    "1,2,4,16)",
                                    text, part));
        if (!rows.empty() && v <= rows.back())
            throw Error(fmt::format("--rows {}: {} after {}: the buckets go in increasing order", text, v,
                                    rows.back()));
        rows.push_back(v);
        if (end == std::string::npos) break;
        at = end + 1;
    }
    if (rows.size() > program::max_set_buckets)
        throw Error(fmt::format("--rows {}: {} buckets, a set holds at most {}", text, rows.size(),
                                program::max_set_buckets));
    return rows;
}

/// `--slots N|auto`: N, or what the card's DDR holds beside the set (`room`) capped at the largest
/// bucket's rows (more sequences than a step's rows never decode together).
std::size_t parse_slots(const std::string& text, const lower::SlotCapacity& room, std::size_t largest,
                        std::size_t positions) {
    if (text == "auto") {
        if (room.slots == 0)
            throw Error(fmt::format("--slots auto: the card's DDR holds no slot of {} positions ({} bytes a "
                                    "slot, {} bytes left beside the weights, io and programs): lower "
                                    "--max-positions or use a larger card",
                                    positions, room.per_slot, room.free));
        return std::size_t(std::min<std::uint64_t>(room.slots, largest));
    }
    std::size_t v = 0, used = 0;
    try {
        v = std::stoul(text, &used);
    } catch (...) {
        used = 0;
    }
    if (used != text.size() || v == 0 || text[0] == '-')
        throw Error(fmt::format("--slots {}: expected a positive count of sequences, or auto", text));
    if (v > room.slots)
        throw Error(fmt::format("--slots {}: the card's DDR holds {} slots of {} positions ({} bytes a slot, "
                                "{} bytes left beside the weights, io and programs)",
                                v, room.slots, positions, room.per_slot, room.free));
    return v;
}

/// `bytes` written to a temporary of `path`, staged (closed, synced) and not yet renamed: a compile
/// stages every output (the program files and their images) before it publishes any, so a failure
/// leaves the previous outputs as they were, never a program beside another compile's image.
io::AtomicFile staged(const std::filesystem::path& path, std::span<const std::byte> bytes) {
    io::AtomicFile f(path);
    f.write(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    f.stage();
    return f;
}

/// Compiles `rows` buckets on `slots` stores and writes the set to `out` and its image to `out.ddr`.
void compile_set(const graph::Graph& g, const models::Model& model, const card::CardConfig& config,
                 lower::Options o, const std::string& rows_text, const std::string& slots_text,
                 const std::string& out) {
    std::vector<graph::Bucket> buckets;
    for (auto r : parse_rows(rows_text))
        buckets.push_back(graph::Bucket{r, 1, 0});
    const auto target = lower::target_of(config);
    o.bucket = buckets.front();
    o.slots = 1;
    auto room = lower::slot_capacity(g, model.checkpoint, target, o, buckets);
    o.slots = parse_slots(slots_text, room, buckets.back().tokens, o.max_positions);
    program::ProgramSet set;
    program::Image image;
    // The first bucket's weights (the set's) are written straight into the image file.
    program::ImageFile image_file(out + ".ddr");
    o.image_file = [&image_file](std::size_t) { return &image_file; };
    for (auto& c : lower::lower_set(g, model.checkpoint, target, o, buckets)) {
        if (set.buckets.empty()) image = std::move(c.image);
        set.buckets.push_back(std::move(c.program));
    }
    if (auto why = program::set_refusal(set)) throw Error("compile: the set is inconsistent: " + *why);
    image_file.stage(image);
    auto set_file = staged(out, program::encode(set));
    image_file.publish();
    set_file.publish();
    std::size_t commands = 0;
    for (auto& p : set.buckets)
        commands += p.commands.size();
    fmt::print("{}: a set of {} buckets of {} token rows on {} slots of {} positions; {} commands, arena {} "
               "bytes, {} bytes of weights; image {}.ddr ({} bytes{})\n",
               out, set.buckets.size(), program::rows_list(set), *o.slots, o.max_positions, commands,
               set.buckets.front().arena_bytes, set.buckets.front().region(program::Region::Weights)->size,
               out, image.bytes(), o.shapes_only ? ": shapes only, for timing-only runs" : "");
}

int run_compile(std::span<const std::string> args) {
    namespace po = boost::program_options;
    po::options_description opts("options");
    opts.add(card_options());
    opts.add(knob_options());
    opts.add(plan_options());
    opts.add(pack_cache_options());
    opts.add_options()("model", po::value<std::string>()->required(),
                       "checkpoint directory")("bucket", po::value<std::string>()->default_value("seqs=1"),
                                               "row counts: seqs=S[,tokens=T][,markers=M]")(
        "max-positions", po::value<std::size_t>()->default_value(256),
        "positions each sequence's caches hold")("output,o", po::value<std::string>()->required(),
                                                 "program file (the DDR image goes to FILE.ddr)")(
        "check-layers", po::value<std::string>(),
        "the program also reads back these layers' outputs each step: all, or e.g. 0,3,7")(
        "rows", po::value<std::string>(),
        "a set for serving: buckets of these token rows (e.g. 1,2,4,16), each row any slot's decode "
        "token or prompt chunk token")("slots", po::value<std::string>(),
                                       "with --rows: sequences the stores hold, or auto (what the DDR holds, "
                                       "at most the largest bucket's rows; the default)")(
        "shapes-only", po::bool_switch(),
        "read config.json alone: weights are placed by shape, never read or packed (timing-only runs)");
    const char* const positional[] = {"model"};
    auto vm =
        parse("compile",
              "MODEL_DIR -o PROG [--config C] [--set k=v] [--knob k=v] [--bucket seqs=1] [--max-positions N] "
              "[--check-layers all|0,3,7] [--shapes-only]\n       cardsim compile MODEL_DIR -o PROG --rows "
              "1,2,4,16 "
              "[--slots N|auto] [--max-positions N] ...",
              args, opts, positional);
    auto knobs = knob_overrides(vm);
    auto config = load_card(vm, knobs);
    const auto plan = plan_of(vm, config);
    std::string out = vm["output"].as<std::string>();
    Outputs outputs; // checked before any work; removed again (the program and its image) on a failure
    outputs.file("-o", out);
    outputs.file("-o (its DDR image)", out + ".ddr");
    auto model = models::load_model(vm["model"].as<std::string>(), vm["shapes-only"].as<bool>());
    auto built = models::build_graph(model);
    require_card_runs(built.graph, config, vm["model"].as<std::string>());
    lower::Options o;
    o.shapes_only = model.checkpoint.shapes_only();
    if (vm.count("slots") && !vm.count("rows"))
        throw Error("--slots: the stores are slot-addressed in a set for serving: give --rows too");
    if (vm.count("rows") && !vm["bucket"].defaulted())
        throw Error("--rows makes a set of buckets of token rows: give --rows or --bucket, not both");
    if (vm.count("rows") && vm.count("check-layers"))
        throw Error(
            "--check-layers: a set for serving reads back the next tokens only (drop --check-layers)");
    if (vm.count("rows") && !std::holds_alternative<models::DecoderSpec>(model.spec))
        throw Error(fmt::format("--rows: a set for serving is for decoders, and {} is an encoder",
                                vm["model"].as<std::string>()));
    if (o.shapes_only && vm.count("check-layers"))
        throw Error(fmt::format("--check-layers: a shapes-only program ({}) runs timing-only, which computes "
                                "no layer output to check (drop --check-layers)",
                                vm["shapes-only"].as<bool>()
                                    ? "--shapes-only"
                                    : vm["model"].as<std::string>() + " has no weights"));
    if (!std::holds_alternative<models::DecoderSpec>(model.spec) && !vm["max-positions"].defaulted())
        throw Error(fmt::format("--max-positions: {} is an encoder, which keeps no caches of positions (drop "
                                "--max-positions)",
                                vm["model"].as<std::string>()));
    o.bucket = parse_bucket(vm["bucket"].as<std::string>());
    if (o.bucket.markers > 0 && std::holds_alternative<models::DecoderSpec>(model.spec))
        throw Error(
            fmt::format("--bucket markers={}: marker rows are gathered by an encoder's head, and {} is "
                        "a decoder (drop markers)",
                        o.bucket.markers, vm["model"].as<std::string>()));
    if (std::holds_alternative<models::DecoderSpec>(model.spec) && o.bucket.tokens != o.bucket.seqs)
        // What `run` feeds a decoder: a token of each sequence a step. Any other bucket would be
        // written and then refused by every run (a prefill chunk is timed by run --prompt-len).
        throw Error(
            fmt::format("--bucket tokens={},seqs={}: cardsim run decodes one token of each sequence a "
                        "step, so a decoder's bucket has as many tokens as sequences (give seqs=S "
                        "alone; a prompt's prefill in chunks is timed by run --prompt-len)",
                        o.bucket.tokens, o.bucket.seqs));
    if (!std::holds_alternative<models::DecoderSpec>(model.spec)) {
        // What `run` feeds an encoder: one sequence, a marker every fourth token. Any other bucket
        // would be written and then refused by every run.
        if (o.bucket.seqs != 1)
            throw Error(fmt::format("--bucket seqs={}: an encoder runs one sequence (one prompt) a step",
                                    o.bucket.seqs));
        const auto want = encoder_markers(o.bucket.tokens).size();
        const bool markers_given = vm["bucket"].as<std::string>().find("markers=") != std::string::npos;
        if (markers_given && o.bucket.markers != want)
            throw Error(
                fmt::format("--bucket markers={}: an encoder run of {} tokens gathers {} markers (one "
                            "every fourth token); drop markers or give {}",
                            o.bucket.markers, o.bucket.tokens, want, want));
        o.bucket.markers = want;
    }
    o.max_positions = vm["max-positions"].as<std::size_t>();
    if (vm.count("check-layers")) o.probes = layer_probes(built.graph, vm["check-layers"].as<std::string>());
    o.model = models::describe(model.spec);
    o.pack_cache = pack_cache_of(vm);
    if (vm.count("pack-cache") && o.shapes_only)
        throw Error(vm["shapes-only"].as<bool>()
                        ? std::string("--pack-cache: a shapes-only compile reads and packs no weights (drop "
                                      "--pack-cache, or --shapes-only)")
                        : fmt::format("--pack-cache: {} has no weights (config.json alone), so nothing is "
                                      "packed (drop --pack-cache)",
                                      vm["model"].as<std::string>()));
    // One program without a pack cache takes the checkpoint's digest only as a label: it is read
    // beside lowering (a pass over the checkpoint's files) and set when lowering is done.
    std::future<std::uint64_t> digest;
    if (o.pack_cache.empty() && plan.one() && !vm.count("rows") && kernels::host_threads() > 1)
        digest = std::async(std::launch::async, [&checkpoint = model.checkpoint] {
            return models::checkpoint_digest(checkpoint);
        });
    else
        o.checkpoint_digest = models::checkpoint_digest(model.checkpoint);
    o.pack_cache_limit = lower::pack_cache_limit_from_environment(); // CARDSIM_PACK_CACHE_MAX
    if (vm.count("rows")) {
        if (!plan.one())
            throw Error(
                fmt::format("--plan {}: a set for serving is not built for a system of cards yet (drop "
                            "--rows or --plan)",
                            lower::name(plan)));
        compile_set(built.graph, model, config, o, vm["rows"].as<std::string>(),
                    vm.count("slots") ? vm["slots"].as<std::string>() : "auto", out);
        outputs.keep();
        return Ok;
    }
    if (!plan.one()) {
        if (vm.count("check-layers"))
            throw Error(fmt::format("--plan {}: --check-layers is not built for a system of cards yet (drop "
                                    "--check-layers or --plan)",
                                    lower::name(plan)));
        // One program a card: OUT.cardK and its image OUT.cardK.ddr.
        const std::size_t n = config.system.cards;
        for (std::size_t k = 0; k < n; ++k) {
            outputs.file("-o (a card's program)", fmt::format("{}.card{}", out, k));
            outputs.file("-o (a card's DDR image)", fmt::format("{}.card{}.ddr", out, k));
        }
        // Each card's weights are written straight into its image file.
        std::vector<std::unique_ptr<program::ImageFile>> images;
        for (std::size_t k = 0; k < n; ++k)
            images.push_back(std::make_unique<program::ImageFile>(fmt::format("{}.card{}.ddr", out, k)));
        o.image_file = [&images](std::size_t card) {
            return card < images.size() ? images[card].get() : nullptr;
        };
        auto planned = lower_plan(plan, model, built.graph, config, o);
        const auto& cards = planned.cards;
        const auto& parts = planned.parts;
        // What a run of the set would refuse for its links and routes, compile refuses first.
        std::vector<const program::Program*> programs;
        for (auto& c : cards)
            programs.push_back(&c.program);
        if (auto why = sim::system::network_refusal(config, programs))
            throw Error(fmt::format("--plan {}: {}", lower::name(plan), *why));
        // Every card's image and program staged, then all renamed: the cards of one compile.
        std::vector<io::AtomicFile> staged_files;
        for (std::size_t k = 0; k < cards.size(); ++k) {
            const auto name = fmt::format("{}.card{}", out, k);
            if (k < images.size()) {
                images[k]->stage(cards[k].image);
            } else {
                staged_files.emplace_back(name + ".ddr");
                program::write_to(cards[k].image, staged_files.back());
                staged_files.back().stage(false); // not synced: the program checks its image's digest
            }
            staged_files.push_back(staged(name, program::encode(cards[k].program)));
        }
        for (auto& image : images)
            image->publish();
        for (auto& f : staged_files)
            f.publish();
        // Cards of an earlier compile over more cards are not of this one: removed, so that no run
        // takes them for part of it.
        for (std::size_t k = cards.size();; ++k) {
            const auto name = fmt::format("{}.card{}", out, k);
            if (!std::filesystem::exists(name) && !std::filesystem::exists(name + ".ddr")) break;
            std::filesystem::remove(name);
            std::filesystem::remove(name + ".ddr");
        }
        for (std::size_t k = 0; k < cards.size(); ++k) {
            const auto name = fmt::format("{}.card{}", out, k);
            fmt::print("{}: card {} of {}, {}: {} commands, arena {} bytes, {} bytes of weights; "
                       "image {}.ddr ({} bytes)\n",
                       name, k, cards.size(), parts[k], cards[k].program.commands.size(),
                       cards[k].program.arena_bytes, cards[k].program.region(program::Region::Weights)->size,
                       name, cards[k].image.bytes());
        }
        outputs.keep();
        return Ok;
    }
    // The weights are written straight into the image file as they are packed: no copy of them is
    // held in memory.
    program::ImageFile image_file(out + ".ddr");
    o.image_file = [&image_file](std::size_t) { return &image_file; };
    auto c = [&] {
        try {
            return lower::lower(built.graph, model.checkpoint, lower::target_of(config), o);
        } catch (...) {
            if (digest.valid()) digest.wait(); // it reads the checkpoint: never left running
            throw;
        }
    }();
    if (digest.valid()) c.options.checkpoint_digest = c.program.host.checkpoint_digest = digest.get();
    c.options.image_file = nullptr;
    image_file.stage(c.image);
    auto program_file = staged(out, program::encode(c.program));
    image_file.publish();
    program_file.publish();
    outputs.keep();
    fmt::print("{}: {} commands, arena {} bytes, {} bytes of weights; image {}.ddr ({} bytes{})\n", out,
               c.program.commands.size(), c.program.arena_bytes,
               c.program.region(program::Region::Weights)->size, out, c.image.bytes(),
               o.shapes_only         ? ": shapes only, for timing-only runs"
               : c.packed_from_cache ? ", weights from the pack cache"
                                     : "");
    return Ok;
}

const Register registered_compile{
    {"compile", "compile a checkpoint into a program file and its DDR image", run_compile}};

} // namespace
} // namespace cardsim::cli
