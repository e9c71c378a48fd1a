#include "engine/program/program.hpp"

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/program/program_set.hpp"
#include "engine/program/validate.hpp"

#include <fmt/core.h>
#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace cardsim::program {

std::string_view name(Region r) {
    static constexpr std::string_view names[] = {"none",  "weights", "caches", "state",
                                                 "arena", "io",      "program"};
    return names[static_cast<std::size_t>(r)];
}

std::string_view name(Space s) {
    return s == Space::Ddr ? "ddr" : "sram";
}

std::string_view name(IoRole r) {
    static constexpr std::string_view names[] = {"ids",         "positions",     "seq_starts", "qtype",
                                                 "marker_rows", "marker_starts", "logits",     "act",
                                                 "next",        "probe",         "slots"};
    return names[static_cast<std::size_t>(r)];
}

const IoEntry* Host::entry(IoRole r) const {
    for (auto& e : io)
        if (e.role == r && r != IoRole::Probe) return &e;
    return nullptr;
}

std::uint64_t Host::rows(IoRows r) const {
    return r == IoRows::Tokens ? tokens : r == IoRows::Seqs ? seqs : markers;
}

const RegionMap* Program::region(Region r) const {
    for (auto& m : regions)
        if (m.kind == r) return &m;
    return nullptr;
}

std::uint64_t f64_bits(double v) {
    return std::bit_cast<std::uint64_t>(v);
}
double bits_f64(std::uint64_t bits) {
    return std::bit_cast<double>(bits);
}

namespace {

constexpr std::size_t header_bytes = 8 + 4 + 4 + 8 + 8 + 8 + 4 + 4;
constexpr std::size_t region_bytes = 1 + 1 + 2 + 4 + 8 + 8;
constexpr std::size_t command_head_bytes = 2 + 1 + 1 + 4 + 2 + 1 + 1 + 1 + 3;
constexpr std::size_t operand_bytes = 1 + 1 + 2 + 4 + 8 + 8;
constexpr std::size_t host_head_bytes = 6 * 8 + 4 + 4;
constexpr std::size_t io_entry_bytes = 1 + 1 + 2 + 4 + 4 + 4 + 8 + 8 + 8;
constexpr std::size_t max_model_name = 256;
/// The host map's system part (version 4), and the most cards a system has.
constexpr std::size_t system_bytes = 16;
constexpr std::uint64_t max_cards = 4096;
/// The version in the header a program's digest hashes (see `digest`).
constexpr std::uint32_t digest_version = 3;
constexpr std::size_t checksum_bytes = 8;
constexpr std::size_t input_roles = 6; ///< the roles before `Logits`: the inputs every program has

/// Little-endian appends to a byte vector.
class Out {
public:
    std::vector<std::byte> bytes;
    template <class T>
    void put(T v) {
        auto u = static_cast<std::make_unsigned_t<T>>(v);
        for (std::size_t i = 0; i < sizeof(T); ++i)
            bytes.push_back(std::byte((u >> (8 * i)) & 0xff));
    }
    void zeros(std::size_t n) { bytes.insert(bytes.end(), n, std::byte{0}); }
};

/// Little-endian reads from a byte span that name the file and the place on every failure.
class In {
public:
    In(std::span<const std::byte> b, const std::string& file) : b_(b), file_(file) {}

    /// What is being read, for errors ("header", "command 12").
    std::string where = "header";

    std::size_t left() const { return b_.size() - at_; }
    std::size_t at() const { return at_; }

    /// Throws unless `n` more bytes are there.
    void need(std::size_t n, std::string_view what) {
        if (left() < n)
            fail(fmt::format("truncated {}: expected {} more bytes at offset {}, the file has {}", what, n,
                             at_, left()));
    }
    template <class T>
    T get() {
        need(sizeof(T), "field");
        std::make_unsigned_t<T> u = 0;
        for (std::size_t i = 0; i < sizeof(T); ++i)
            u |= std::make_unsigned_t<T>(std::to_integer<unsigned>(b_[at_ + i])) << (8 * i);
        at_ += sizeof(T);
        return static_cast<T>(u);
    }
    /// Reads `n` reserved bytes, which must be zero.
    void reserved(std::size_t n) {
        need(n, "reserved field");
        for (std::size_t i = 0; i < n; ++i)
            if (b_[at_ + i] != std::byte{0})
                fail(fmt::format("reserved byte at offset {} is not zero", at_ + i));
        at_ += n;
    }
    std::span<const std::byte> take(std::size_t n) {
        need(n, "field");
        auto s = b_.subspan(at_, n);
        at_ += n;
        return s;
    }
    [[noreturn]] void fail(const std::string& what) const {
        throw Error(fmt::format("{}: {}: {}", file_, where, what));
    }

private:
    std::span<const std::byte> b_;
    const std::string& file_;
    std::size_t at_ = 0;
};

/// `a + b`, or nothing when it overflows 64 bits.
std::optional<std::uint64_t> add(std::uint64_t a, std::uint64_t b) {
    std::uint64_t s;
    if (__builtin_add_overflow(a, b, &s)) return std::nullopt;
    return s;
}

/// Checks the memory map: known kinds and spaces, each kind once, no overflow, no overlap in a space.
void check_regions(In& in, const std::vector<RegionMap>& regions) {
    for (std::size_t i = 0; i < regions.size(); ++i) {
        auto& r = regions[i];
        if (r.kind == Region::None) in.fail(fmt::format("region {} has kind none", i));
        auto end = add(r.base, r.size);
        if (!end)
            in.fail(fmt::format("region {} ({}) base {:#x} + size {:#x} overflows", i, name(r.kind), r.base,
                                r.size));
        for (std::size_t j = 0; j < i; ++j) {
            auto& o = regions[j];
            if (o.kind == r.kind) in.fail(fmt::format("region {} repeats kind {}", i, name(r.kind)));
            if (o.space == r.space && r.size && o.size && r.base < o.base + o.size && o.base < *end)
                in.fail(fmt::format("regions {} and {} overlap in {}", name(o.kind), name(r.kind),
                                    name(r.space)));
        }
    }
}

/// Checks one command against its opcode's table and the memory map.
void check_command(In& in, const Program& p, const Command& c, std::size_t index) {
    auto& s = spec(c.opcode);
    if (c.operands.size() != s.operands.size())
        in.fail(fmt::format("has {} operands, {} takes {}", c.operands.size(), s.name, s.operands.size()));
    if (c.dims.size() != s.dims.size())
        in.fail(fmt::format("has {} dims, {} takes {}", c.dims.size(), s.name, s.dims.size()));
    if (c.params.size() != s.params.size())
        in.fail(fmt::format("has {} params, {} takes {}", c.params.size(), s.name, s.params.size()));
    if (c.flags & ~flag::Defined)
        in.fail(fmt::format("has undefined flag bits {:#x}", c.flags & ~flag::Defined));
    for (auto d : c.deps)
        if (d >= index) in.fail(fmt::format("depends on command {}, which is not earlier", d));
    for (std::size_t i = 0; i < c.operands.size(); ++i) {
        auto& o = c.operands[i];
        auto& os = s.operands[i];
        auto what = fmt::format("operand {} ({})", i, os.name);
        if (o.region == Region::None) {
            if (!os.optional) in.fail(what + " is absent, and " + std::string(s.name) + " needs it");
            if (o.offset || o.bytes) in.fail(what + " is absent but has an offset or a length");
            continue;
        }
        if (o.access != os.access)
            in.fail(fmt::format("{} is accessed {}, {} accesses it {}", what, name(o.access), s.name,
                                name(os.access)));
        auto* r = p.region(o.region);
        if (!r) in.fail(fmt::format("{} is in region {}, which the memory map lacks", what, name(o.region)));
        auto end = add(o.offset, o.bytes);
        if (!end || *end > r->size)
            in.fail(fmt::format("{} at {}+{:#x} ({} bytes) lies outside its region of {} bytes", what,
                                name(o.region), o.offset, o.bytes, r->size));
    }
}

/// The u32 count an input role holds: per token row, per sequence (+1 for the starts), per marker.
std::uint64_t input_count(IoRole r, const Host& h) {
    switch (r) {
    case IoRole::Ids:
    case IoRole::Positions:
    case IoRole::Slots:
        return h.tokens;
    case IoRole::SeqStarts:
    case IoRole::MarkerStarts:
        return h.seqs + 1;
    case IoRole::Qtype:
        return h.seqs;
    default:
        return h.markers;
    }
}

/// Checks the host map against its bucket and the program's io region.
void check_host(In& in, const Program& p) {
    auto& h = p.host;
    in.where = "host map";
    if (h.tokens == 0 || h.seqs == 0)
        in.fail(fmt::format("the bucket has {} tokens and {} sequences, expected at least one of each",
                            h.tokens, h.seqs));
    if (h.max_positions == 0) in.fail("the caches hold 0 positions, expected at least one");
    if (h.tokens > (1ull << 32) || h.seqs > (1ull << 32) || h.markers > (1ull << 32))
        in.fail("a bucket row count is past 2^32");
    auto* io = p.region(Region::Io);
    std::size_t seen[io_role_count] = {};
    for (std::size_t i = 0; i < h.io.size(); ++i) {
        auto& e = h.io[i];
        in.where = fmt::format("host map, io entry {} ({})", i, name(e.role));
        auto role = static_cast<std::size_t>(e.role);
        bool input = is_input(e.role), probe = e.role == IoRole::Probe;
        if (!probe && seen[role]++) in.fail(input ? "repeats an input" : "repeats an output of the graph");
        if (input) {
            const bool slots = e.role == IoRole::Slots;
            if (e.value != no_index || e.after != no_index || e.layer != no_index || (e.width && !slots) ||
                e.rows != IoRows{})
                in.fail("an input has no value, op, layer, rows or width, expected none");
            if (slots && (e.width == 0 || e.width >= (1ull << 32)))
                in.fail(fmt::format("the slot count is {}, expected 1 .. 2^32 - 1", e.width));
            auto want = 4 * input_count(e.role, h);
            if (e.bytes != want)
                in.fail(fmt::format("has {} bytes, the bucket needs {} ({} u32)", e.bytes, want, want / 4));
        } else {
            if (e.value == no_index) in.fail("an output names no graph value");
            if (!probe && (e.after != no_index || e.layer != no_index))
                in.fail("a graph output has an op or a layer, which only probes have");
            if (probe && e.after == no_index) in.fail("a probe names no op it stands after");
            if (e.width == 0 || e.width > (1ull << 32))
                in.fail(fmt::format("width {} is not in 1 .. 2^32", e.width));
            auto want = 4 * h.rows(e.rows) * e.width;
            if (e.bytes != want)
                in.fail(fmt::format("has {} bytes, {} rows of {} f32 need {}", e.bytes, h.rows(e.rows),
                                    e.width, want));
        }
        if (!io) in.fail("the memory map has no io region");
        if (!e.bytes) {
            if (e.offset > io->size)
                in.fail(fmt::format("an empty entry at io+{:#x} lies past the io region of {} bytes",
                                    e.offset, io->size));
            continue;
        }
        auto end = add(e.offset, e.bytes);
        if (!end || *end > io->size)
            in.fail(fmt::format("io+{:#x} ({} bytes) lies outside the io region of {} bytes", e.offset,
                                e.bytes, io->size));
        for (std::size_t j = 0; j < i; ++j) {
            auto& o = h.io[j];
            if (o.bytes && e.offset < o.offset + o.bytes && o.offset < *end)
                in.fail(fmt::format("overlaps io entry {} ({})", j, name(o.role)));
        }
    }
    in.where = "host map";
    for (std::size_t r = 0; r < input_roles; ++r)
        if (!seen[r]) in.fail(fmt::format("has no {} entry, every input needs one", name(IoRole(r))));
}

/// Encodes the header, the memory map and the commands: what the card fetches, with `file_version`
/// in the header.
void encode_card_part(Out& o, const Program& p, std::uint32_t file_version = version) {
    for (char c : magic)
        o.put(static_cast<std::uint8_t>(c));
    o.put(file_version);
    o.put(std::uint32_t{0});
    o.put(p.config_digest);
    o.put(p.image_digest);
    o.put(p.arena_bytes);
    o.put(static_cast<std::uint32_t>(p.regions.size()));
    o.put(static_cast<std::uint32_t>(p.commands.size()));
    for (auto& r : p.regions) {
        o.put(static_cast<std::uint8_t>(r.kind));
        o.put(static_cast<std::uint8_t>(r.space));
        o.zeros(6);
        o.put(r.base);
        o.put(r.size);
    }
    for (auto& c : p.commands) {
        o.put(static_cast<std::uint16_t>(c.opcode));
        o.put(static_cast<std::uint8_t>(c.unit));
        o.zeros(1);
        o.put(c.flags);
        o.put(static_cast<std::uint16_t>(c.deps.size()));
        // Absent slot operands (`slots`, and the recurrent opcodes' `positions`) are left out: a
        // program without slots keeps its old bytes.
        const std::size_t tail = slot_tail(spec(c.opcode));
        const bool omit = tail && c.operands.size() >= tail &&
                          std::all_of(c.operands.end() - std::ptrdiff_t(tail), c.operands.end(),
                                      [](const Operand& x) { return x.region == Region::None; });
        const std::size_t written = c.operands.size() - (omit ? tail : 0);
        o.put(static_cast<std::uint8_t>(written));
        o.put(static_cast<std::uint8_t>(c.dims.size()));
        o.put(static_cast<std::uint8_t>(c.params.size()));
        o.zeros(3);
        for (auto d : c.deps)
            o.put(d);
        for (auto& op : std::span(c.operands).first(written)) {
            o.put(static_cast<std::uint8_t>(op.region));
            o.put(static_cast<std::uint8_t>(op.access));
            o.zeros(6);
            o.put(op.offset);
            o.put(op.bytes);
        }
        for (auto d : c.dims)
            o.put(d);
        for (auto v : c.params)
            o.put(v);
    }
}

} // namespace

std::vector<std::byte> encode(const Program& p) {
    Out o;
    encode_card_part(o, p);
    auto& h = p.host;
    for (auto v : {h.checkpoint_digest, h.tokens, h.seqs, h.markers, h.max_positions, h.vocab})
        o.put(v);
    o.put(static_cast<std::uint32_t>(h.io.size()));
    o.put(static_cast<std::uint32_t>(h.model.size()));
    for (char c : h.model)
        o.put(static_cast<std::uint8_t>(c));
    o.put(h.tensor);
    o.put(h.stages);
    o.put(h.card);
    o.put(static_cast<std::uint8_t>(h.experts ? 1 : 0));
    o.zeros(3);
    for (auto& e : h.io) {
        o.put(static_cast<std::uint8_t>(e.role));
        o.put(static_cast<std::uint8_t>(e.rows));
        o.zeros(2);
        o.put(e.value);
        o.put(e.after);
        o.put(e.layer);
        o.put(e.width);
        o.put(e.offset);
        o.put(e.bytes);
    }
    o.put(static_cast<std::uint64_t>(XXH64(o.bytes.data(), o.bytes.size(), 0)));
    return std::move(o.bytes);
}

std::uint64_t card_bytes(const Program& p) {
    Out o;
    encode_card_part(o, p);
    return o.bytes.size();
}

Program decode(std::span<const std::byte> whole, const std::string& file) {
    In head(whole, file);
    head.need(header_bytes, "header");
    auto m = head.take(8);
    if (std::memcmp(m.data(), set_magic, 8) == 0)
        head.fail("this is a program set of several buckets (cardsim compile --rows): serve it with "
                  "`cardsim serve PROG`, or print it with `cardsim disasm PROG`");
    if (std::memcmp(m.data(), magic, 8) != 0) head.fail("wrong magic: this is not a cardsim program");
    auto v = head.get<std::uint32_t>();
    if (v != version)
        head.fail(fmt::format(
            "format version {}, this build reads version {}{}", v, version,
            v < version ? " (the file is older: compile the model again with `cardsim compile`)" : ""));
    // The checksum over every byte before it, checked before any other field is trusted.
    head.where = "checksum";
    head.need(header_bytes - head.at() + checksum_bytes, "file");
    const auto bytes = whole.first(whole.size() - checksum_bytes);
    std::uint64_t stored = 0;
    for (std::size_t i = 0; i < checksum_bytes; ++i)
        stored |= std::uint64_t(std::to_integer<unsigned>(whole[bytes.size() + i])) << (8 * i);
    if (auto actual = XXH64(bytes.data(), bytes.size(), 0); stored != actual)
        head.fail(fmt::format("the file ends in checksum {:016x}, its bytes hash to {:016x}: the file is "
                              "damaged or truncated (compile it again)",
                              stored, actual));
    In in(bytes, file);
    in.take(head.at());
    in.where = "header";
    in.reserved(4);
    Program p;
    p.config_digest = in.get<std::uint64_t>();
    p.image_digest = in.get<std::uint64_t>();
    p.arena_bytes = in.get<std::uint64_t>();
    auto nregions = in.get<std::uint32_t>();
    auto ncommands = in.get<std::uint32_t>();
    if (nregions > region_count)
        in.fail(fmt::format("{} regions, at most {} kinds exist", nregions, region_count));
    in.need(std::size_t(nregions) * region_bytes, "memory map");
    if (std::uint64_t(ncommands) * command_head_bytes > in.left() - std::size_t(nregions) * region_bytes)
        in.fail(fmt::format("{} commands cannot fit in the {} bytes left", ncommands, in.left()));
    for (std::uint32_t i = 0; i < nregions; ++i) {
        in.where = fmt::format("region {}", i);
        RegionMap r;
        auto kind = in.get<std::uint8_t>();
        if (kind >= region_count) in.fail(fmt::format("unknown region kind {}", kind));
        r.kind = static_cast<Region>(kind);
        auto space = in.get<std::uint8_t>();
        if (space > 1) in.fail(fmt::format("unknown memory space {}, expected 0 (ddr) or 1 (sram)", space));
        r.space = static_cast<Space>(space);
        in.reserved(6);
        r.base = in.get<std::uint64_t>();
        r.size = in.get<std::uint64_t>();
        p.regions.push_back(r);
    }
    in.where = "memory map";
    check_regions(in, p.regions);
    p.commands.reserve(ncommands);
    for (std::uint32_t i = 0; i < ncommands; ++i) {
        in.where = fmt::format("command {}", i);
        in.need(command_head_bytes, "command");
        Command c;
        auto raw = in.get<std::uint16_t>();
        auto op = opcode_from(raw);
        if (!op) in.fail(fmt::format("unknown opcode {}", raw));
        c.opcode = *op;
        in.where = fmt::format("command {} ({})", i, name(c.opcode));
        auto unit = in.get<std::uint8_t>();
        if (unit >= unit_count) in.fail(fmt::format("unknown unit {}", unit));
        c.unit = static_cast<Unit>(unit);
        in.reserved(1);
        c.flags = in.get<std::uint32_t>();
        auto ndeps = in.get<std::uint16_t>();
        auto nops = in.get<std::uint8_t>();
        auto ndims = in.get<std::uint8_t>();
        auto nparams = in.get<std::uint8_t>();
        in.reserved(3);
        in.need(std::size_t(ndeps) * 4 + std::size_t(nops) * operand_bytes +
                    (std::size_t(ndims) + nparams) * 8,
                "command");
        for (std::uint16_t d = 0; d < ndeps; ++d)
            c.deps.push_back(in.get<std::uint32_t>());
        for (std::uint8_t k = 0; k < nops; ++k) {
            Operand o;
            auto region = in.get<std::uint8_t>();
            if (region >= region_count) in.fail(fmt::format("operand {} names unknown region {}", k, region));
            o.region = static_cast<Region>(region);
            auto access = in.get<std::uint8_t>();
            if (access < 1 || access > 3) in.fail(fmt::format("operand {} has unknown access {}", k, access));
            o.access = static_cast<Access>(access);
            in.reserved(6);
            o.offset = in.get<std::uint64_t>();
            o.bytes = in.get<std::uint64_t>();
            c.operands.push_back(o);
        }
        for (std::uint8_t k = 0; k < ndims; ++k)
            c.dims.push_back(in.get<std::uint64_t>());
        for (std::uint8_t k = 0; k < nparams; ++k)
            c.params.push_back(in.get<std::uint64_t>());
        // A file leaves out absent slot operands: the command holds them absent.
        if (const std::size_t tail = slot_tail(spec(c.opcode));
            tail && c.operands.size() + tail == spec(c.opcode).operands.size())
            c.operands.resize(c.operands.size() + tail);
        check_command(in, p, c, i);
        p.commands.push_back(std::move(c));
    }
    in.where = "host map";
    in.need(host_head_bytes, "host map");
    auto& h = p.host;
    for (auto* v : {&h.checkpoint_digest, &h.tokens, &h.seqs, &h.markers, &h.max_positions, &h.vocab})
        *v = in.get<std::uint64_t>();
    auto nio = in.get<std::uint32_t>();
    auto name_len = in.get<std::uint32_t>();
    if (name_len > max_model_name)
        in.fail(fmt::format("the model name has {} bytes, at most {} are allowed", name_len, max_model_name));
    if (std::uint64_t(nio) * io_entry_bytes + name_len + system_bytes > in.left())
        in.fail(
            fmt::format("truncated host map: a {}-byte model name, the system and {} io entries cannot fit "
                        "in the {} bytes left",
                        name_len, nio, in.left()));
    for (auto b : in.take(name_len)) {
        auto c = std::to_integer<unsigned char>(b);
        if (c < 0x20 || c > 0x7e)
            in.fail(fmt::format("the model name has byte {:#04x}, expected printable ASCII", c));
        h.model.push_back(static_cast<char>(c));
    }
    in.need(system_bytes, "host map's system");
    h.tensor = in.get<std::uint32_t>();
    h.stages = in.get<std::uint32_t>();
    h.card = in.get<std::uint32_t>();
    const auto experts = in.get<std::uint8_t>();
    if (experts > 1) in.fail(fmt::format("the experts flag is {}, expected 0 or 1", experts));
    h.experts = experts == 1;
    in.reserved(3);
    if (h.tensor == 0 || h.stages == 0 || std::uint64_t(h.tensor) * h.stages > max_cards)
        in.fail(fmt::format("a system of {} tensor ranks × {} stages, expected 1 .. {} cards", h.tensor,
                            h.stages, max_cards));
    if (h.card >= h.tensor * h.stages)
        in.fail(fmt::format("card {} of a system of {} cards", h.card, h.tensor * h.stages));
    for (std::uint32_t i = 0; i < nio; ++i) {
        in.where = fmt::format("host map, io entry {}", i);
        IoEntry e;
        auto role = in.get<std::uint8_t>();
        if (role >= io_role_count) in.fail(fmt::format("unknown role {}", role));
        e.role = static_cast<IoRole>(role);
        auto rows = in.get<std::uint8_t>();
        if (rows > 2)
            in.fail(fmt::format("unknown row kind {}, expected 0 (tokens), 1 (seqs) or 2 (markers)", rows));
        e.rows = static_cast<IoRows>(rows);
        in.reserved(2);
        e.value = in.get<std::uint32_t>();
        e.after = in.get<std::uint32_t>();
        e.layer = in.get<std::uint32_t>();
        e.width = in.get<std::uint64_t>();
        e.offset = in.get<std::uint64_t>();
        e.bytes = in.get<std::uint64_t>();
        h.io.push_back(e);
    }
    check_host(in, p);
    in.where = "end";
    if (in.left() != 0) in.fail(fmt::format("{} bytes after the host map", in.left()));
    return p;
}

void write(const Program& p, const std::filesystem::path& path) {
    io::write_file_atomically(path, encode(p));
}

Program read(const std::filesystem::path& path) {
    return decode(io::read_bytes(path), path.string());
}

std::uint64_t digest(const Program& p) {
    Out o;
    // Of the card's part as version 3 wrote it: the versions since changed the host map only, so
    // programs keep their digests (and the traces that name them stay valid).
    encode_card_part(o, p, digest_version);
    return XXH64(o.bytes.data(), o.bytes.size(), 0);
}

} // namespace cardsim::program
