#include "engine/program/validate.hpp"

#include "engine/error.hpp"
#include "engine/kernels/formats.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/program/slots.hpp"

#include <fmt/core.h>

#include <cmath>

#include <initializer_list>
#include <optional>

namespace cardsim::program {
namespace {

constexpr std::uint64_t max_dim = 1ull << 32;

/// The checks of one command, each failure naming the file, the command, its opcode and the slot.
class Check {
public:
    Check(const Command& c, std::size_t index, const std::string& file, const card::CardConfig* config)
        : c_(c), index_(index), file_(file), config_(config) {}

    const card::CardConfig* config() const { return config_; }
    /// The command's flags.
    std::uint32_t flags() const { return c_.flags; }

    [[noreturn]] void fail(const std::string& what) const {
        throw Error(fmt::format("{}: command {} ({}): {}", file_, index_, name(c_.opcode), what));
    }

    /// The product of `v`, or a failure naming `what` when it overflows 64 bits.
    std::uint64_t product(std::initializer_list<std::uint64_t> v, std::string_view what) const {
        std::uint64_t r = 1;
        for (auto x : v)
            if (__builtin_mul_overflow(r, x, &r)) fail(fmt::format("{} overflows 64 bits", what));
        return r;
    }

    /// Dim `name` is at least `lo`.
    void at_least(std::string_view dim, std::uint64_t v, std::uint64_t lo) const {
        if (v < lo) fail(fmt::format("dim {} is {}, expected at least {}", dim, v, lo));
    }

    /// Operand `k` holds exactly `bytes` bytes (`what` says why).
    void bytes(std::size_t k, std::uint64_t want, std::string_view what) const {
        auto& o = c_.operands[k];
        if (o.region == Region::None) fail(fmt::format("operand {} is absent, {} needs it", slot(k), what));
        if (o.bytes != want)
            fail(fmt::format("operand {} ({}+{:#x}) has {} bytes, {} needs {}", slot(k), name(o.region),
                             o.offset, o.bytes, what, want));
    }
    /// Operand `k` holds `count` f32 (`what`: the count's formula).
    void f32s(std::size_t k, std::uint64_t count, std::string_view what) const {
        bytes(k, product({count, 4}, what), fmt::format("{} f32", what));
    }
    /// Operand `k` is absent, or holds `count` f32.
    void absent_or_f32s(std::size_t k, std::uint64_t count, std::string_view what) const {
        if (c_.operands[k].region != Region::None) f32s(k, count, what);
    }
    /// Operand `k` is absent.
    void absent(std::size_t k, std::string_view why) const {
        if (c_.operands[k].region != Region::None)
            fail(fmt::format("operand {} is present, {}", slot(k), why));
    }
    /// Operand `k` holds at least `count` u32 (an io input the host writes).
    void u32s(std::size_t k, std::uint64_t count, std::string_view what) const {
        auto& o = c_.operands[k];
        auto want = product({count, 4}, what);
        if (o.bytes < want)
            fail(fmt::format("operand {} ({}+{:#x}) has {} bytes, {} u32 need {}", slot(k), name(o.region),
                             o.offset, o.bytes, what, want));
    }
    /// Operand `k` is a per-sequence store (a cache or a state) of sequences of at least `each`
    /// bytes over which the command's `rows` divide, as the kernels read it
    /// (kernels::sequence_of_row: each sequence's part padded to a line, or not).
    void parts(std::size_t k, std::uint64_t rows, std::uint64_t each, std::string_view what) const {
        auto& o = c_.operands[k];
        std::string why;
        if (slotted()) { // each row names its sequence: the store needs whole sequences, any number
            if (o.bytes < each) why = "it holds less than one sequence";
            if (!why.empty())
                fail(fmt::format("operand {} ({}+{:#x}) has {} bytes, {} of {} bytes each: {}", slot(k),
                                 name(o.region), o.offset, o.bytes, what, each, why));
            return;
        }
        try {
            auto last = kernels::sequence_of_row(o.bytes, each, rows, rows - 1);
            if (last.bytes < each || last.offset + last.bytes > o.bytes)
                why = "its last sequence runs past it";
        } catch (const Error& e) {
            why = e.what();
        }
        if (o.bytes < each) why = "it holds less than one sequence";
        if (!why.empty())
            fail(fmt::format("operand {} ({}+{:#x}) has {} bytes, {} of {} bytes each for {} rows: {}",
                             slot(k), name(o.region), o.offset, o.bytes, what, each, rows, why));
    }
    /// Whether the command is a stateful one whose `slots` operand is present (lower::Options::slots).
    bool slotted() const {
        auto& s = spec(c_.opcode);
        return omits_absent_slots(s) && c_.operands.size() == s.operands.size() &&
               c_.operands.back().region != Region::None;
    }
    /// A stateful command's `slots` operand, when present, holds a u32 per row in the io region;
    /// a recurrent one's `positions` is present exactly when `slots` is, and holds the same.
    void slot_rows(std::uint64_t rows) const {
        const std::size_t tail = slot_tail(spec(c_.opcode)), n = c_.operands.size();
        if (tail == 2 && !slotted() && c_.operands[n - 2].region != Region::None)
            fail(fmt::format("operand {} is present without slots (it marks where a slot's sequence starts)",
                             slot(n - 2)));
        if (!slotted()) return;
        for (std::size_t k = n - tail; k < n; ++k) {
            if (c_.operands[k].region != Region::Io)
                fail(fmt::format("operand {} is in region {}, expected io (the host writes it)", slot(k),
                                 name(c_.operands[k].region)));
            u32s(k, rows, "rows");
        }
    }
    /// Operand `k` holds a whole number (at least one) of `unit`-byte rows: how many.
    std::uint64_t rows_of(std::size_t k, std::uint64_t unit, std::string_view what) const {
        auto& o = c_.operands[k];
        if (unit == 0 || o.bytes == 0 || o.bytes % unit != 0)
            fail(fmt::format("operand {} has {} bytes, expected a positive multiple of {} ({})", slot(k),
                             o.bytes, unit, what));
        return o.bytes / unit;
    }
    /// `group` divides `width`, both positive.
    void groups(std::uint64_t width, std::uint64_t group) const {
        at_least("width", width, 1);
        at_least("group", group, 1);
        if (width % group != 0) fail(fmt::format("dim group {} does not divide width {}", group, width));
    }

private:
    std::string_view slot(std::size_t k) const { return spec(c_.opcode).operands[k].name; }

    const Command& c_;
    std::size_t index_;
    const std::string& file_;
    const card::CardConfig* config_;
};

/// The bytes of a packed `[rows, cols]` matrix on the config's weight format.
std::uint64_t packed_bytes(const Check& k, std::uint64_t rows, std::uint64_t cols) {
    try {
        return kernels::matrix_layout(*k.config(), rows, cols).bytes();
    } catch (const Error& e) {
        k.fail(fmt::format("a {} × {} weight matrix has no layout on this card: {}", rows, cols, e.what()));
    }
}

// ---- the shape rule of each opcode ----

void shapes(const Check& k, const Args<slots::Copy>& a) {
    if (a.operands.src.bytes != a.operands.dst.bytes)
        k.fail(fmt::format("src has {} bytes and dst {}, a copy moves the same bytes", a.operands.src.bytes,
                           a.operands.dst.bytes));
}

void shapes(const Check& k, const Args<slots::Embed>& a) {
    using O = slots::Embed::Operand;
    auto& d = a.dims;
    k.at_least("rows", d.rows, 1);
    k.at_least("width", d.width, 1);
    k.u32s(at(O::ids), d.rows, "rows");
    k.f32s(at(O::out), k.product({d.rows, d.width}, "rows × width"), "rows × width");
    if (k.config()) k.rows_of(at(O::table), packed_bytes(k, 1, d.width), "packed rows of width f32");
}

void shapes(const Check& k, const Args<slots::RmsNorm>& a) {
    using O = slots::RmsNorm::Operand;
    auto& d = a.dims;
    k.groups(d.width, d.group);
    auto n = k.product({d.rows, d.width}, "rows × width");
    k.f32s(at(O::x), n, "rows × width");
    k.f32s(at(O::out), n, "rows × width");
    k.absent_or_f32s(at(O::w), d.group, "group");
}

void shapes(const Check& k, const Args<slots::LayerNorm>& a) {
    using O = slots::LayerNorm::Operand;
    auto& d = a.dims;
    k.at_least("width", d.width, 1);
    auto n = k.product({d.rows, d.width}, "rows × width");
    k.f32s(at(O::x), n, "rows × width");
    k.f32s(at(O::out), n, "rows × width");
    k.f32s(at(O::w), d.width, "width");
    k.absent_or_f32s(at(O::b), d.width, "width");
}

void shapes(const Check& k, const Args<slots::Matvec>& a) {
    using O = slots::Matvec::Operand;
    auto& d = a.dims;
    k.at_least("n", d.n, 1);
    k.at_least("k", d.k, 1);
    k.at_least("n1", d.n1, 1);
    if (d.n1 > d.n || d.n2 > d.n - d.n1)
        k.fail(fmt::format("dims n1 {} + n2 {} exceed n {}", d.n1, d.n2, d.n));
    const std::uint64_t n3 = d.n - d.n1 - d.n2;
    k.f32s(at(O::x), k.product({d.rows, d.k}, "rows × k"), "rows × k");
    if (k.flags() & flag::Partial) { // exact parts, 24 bytes each, one output
        if (d.n1 != d.n) k.fail("writes exact parts (flag Partial) to one output, expected n1 = n");
        k.absent(at(O::b), "and it writes exact parts (flag Partial)");
        if (k.flags() & (flag::Accumulate | flag::EpilogueGelu | flag::EpilogueRelu))
            k.fail("writes exact parts (flag Partial) and has an epilogue, expected none");
        k.bytes(at(O::out), k.product({d.rows, d.n, 24}, "rows × n × 24"),
                "rows × n exact parts of 24 bytes");
        if (k.config()) k.bytes(at(O::w), packed_bytes(k, d.n, d.k), "a packed n × k matrix");
        return;
    }
    k.absent_or_f32s(at(O::b), d.n, "n");
    k.f32s(at(O::out), k.product({d.rows, d.n1}, "rows × n1"), "rows × n1");
    if (d.n2)
        k.f32s(at(O::out2), k.product({d.rows, d.n2}, "rows × n2"), "rows × n2");
    else
        k.absent(at(O::out2), "and n2 is 0");
    if (n3)
        k.f32s(at(O::out3), k.product({d.rows, n3}, "rows × (n − n1 − n2)"), "rows × (n − n1 − n2)");
    else
        k.absent(at(O::out3), "and n − n1 − n2 is 0");
    if (k.config()) k.bytes(at(O::w), packed_bytes(k, d.n, d.k), "a packed n × k matrix");
}

/// Rotary rows: `width` f32 per row, positions for every row, an even head and rotated part.
void rotary(const Check& k, std::uint64_t rows, std::uint64_t head_dim, std::uint64_t rotary_dim) {
    k.at_least("rows", rows, 1);
    k.at_least("head_dim", head_dim, 2);
    if (rotary_dim == 0 || rotary_dim > head_dim || rotary_dim % 2 != 0)
        k.fail(fmt::format("rotary dim {} is not even and in 2 ..= head_dim {}", rotary_dim, head_dim));
}

/// A rotation's rows and positions (Rotate, RotateScaled: the same dims and first two operands).
template <class S>
void rotated_rows(const Check& k, const Args<S>& a) {
    using O = typename S::Operand;
    auto& d = a.dims;
    rotary(k, d.rows, d.head_dim, d.rotary_dim);
    k.at_least("heads", d.heads, 1);
    k.f32s(at(O::x), k.product({d.rows, d.heads, d.head_dim}, "rows × heads × head_dim"),
           "rows × heads × head_dim");
    k.u32s(at(O::positions), d.rows, "rows");
}

void shapes(const Check& k, const Args<slots::Rotate>& a) {
    rotated_rows(k, a);
}

void shapes(const Check& k, const Args<slots::RotateScaled>& a) {
    using O = slots::RotateScaled::Operand;
    rotated_rows(k, a);
    k.f32s(at(O::freqs), a.dims.rotary_dim / 2, "rotary_dim / 2");
    if (k.config() && !k.config()->units.rotation.yarn)
        k.fail("the card's rotation unit takes no frequency table (units.rotation.yarn is false)");
    if (!(a.params.scale > 0) || !std::isfinite(a.params.scale))
        k.fail(fmt::format("param scale {} is not a positive finite number", a.params.scale));
}

void shapes(const Check& k, const Args<slots::Rope>& a) {
    using O = slots::Rope::Operand;
    auto& d = a.dims;
    rotary(k, d.rows, d.head_dim, d.head_dim);
    k.at_least("heads", d.heads, 1);
    k.f32s(at(O::x), k.product({d.rows, 3, d.heads, d.head_dim}, "rows × 3 × heads × head_dim"),
           "rows × 3 × heads × head_dim");
    k.u32s(at(O::positions), d.rows, "rows");
}

/// A cache operand: `rows` sequences of `kv_heads` × `max_positions` head rows in the cache format.
void cache(const Check& k, std::size_t slot, std::uint64_t rows, std::uint64_t kv_heads,
           std::uint64_t head_dim, std::uint64_t max_positions) {
    if (!k.config()) return;
    auto row = kernels::cache_row_bytes(k.config()->numerics.cache, head_dim);
    k.parts(slot, rows, k.product({kv_heads, max_positions, row}, "the cache"),
            "sequences of kv_heads × max_positions head rows");
}

void shapes(const Check& k, const Args<slots::CacheAppend>& a) {
    using O = slots::CacheAppend::Operand;
    auto& d = a.dims;
    k.at_least("rows", d.rows, 1);
    k.at_least("kv_heads", d.kv_heads, 1);
    k.at_least("head_dim", d.head_dim, 1);
    k.at_least("max_positions", d.max_positions, 1);
    k.f32s(at(O::x), k.product({d.rows, d.kv_heads, d.head_dim}, "rows × kv_heads × head_dim"),
           "rows × kv_heads × head_dim");
    k.u32s(at(O::positions), d.rows, "rows");
    k.slot_rows(d.rows);
    cache(k, at(O::cache), d.rows, d.kv_heads, d.head_dim, d.max_positions);
}

void shapes(const Check& k, const Args<slots::Attend>& a) {
    using O = slots::Attend::Operand;
    auto& d = a.dims;
    k.at_least("rows", d.rows, 1);
    k.at_least("kv_heads", d.kv_heads, 1);
    k.at_least("head_dim", d.head_dim, 1);
    k.at_least("max_positions", d.max_positions, 1);
    if (d.heads == 0 || d.heads % d.kv_heads != 0)
        k.fail(fmt::format("dim heads {} is not a positive multiple of kv_heads {}", d.heads, d.kv_heads));
    auto q = k.product({d.rows, d.heads, d.head_dim}, "rows × heads × head_dim");
    k.f32s(at(O::q), q, "rows × heads × head_dim");
    k.f32s(at(O::out), q, "rows × heads × head_dim");
    k.u32s(at(O::positions), d.rows, "rows");
    k.absent_or_f32s(at(O::sinks), d.heads, "heads");
    k.slot_rows(d.rows);
    cache(k, at(O::keys), d.rows, d.kv_heads, d.head_dim, d.max_positions);
    cache(k, at(O::values), d.rows, d.kv_heads, d.head_dim, d.max_positions);
}

void shapes(const Check& k, const Args<slots::SelfAttention>& a) {
    using O = slots::SelfAttention::Operand;
    auto& d = a.dims;
    k.at_least("rows", d.rows, 1);
    k.at_least("seqs", d.seqs, 1);
    k.at_least("heads", d.heads, 1);
    k.at_least("head_dim", d.head_dim, 1);
    auto row = k.product({d.rows, d.heads, d.head_dim}, "rows × heads × head_dim");
    k.f32s(at(O::qkv), k.product({row, 3}, "rows × 3 × heads × head_dim"), "rows × 3 × heads × head_dim");
    k.f32s(at(O::out), row, "rows × heads × head_dim");
    k.u32s(at(O::seq_starts), d.seqs + 1, "seqs + 1");
}

void shapes(const Check& k, const Args<slots::Conv>& a) {
    using O = slots::Conv::Operand;
    auto& d = a.dims;
    k.at_least("rows", d.rows, 1);
    k.at_least("channels", d.channels, 1);
    k.at_least("kernel", d.kernel, 1);
    auto n = k.product({d.rows, d.channels}, "rows × channels");
    k.f32s(at(O::x), n, "rows × channels");
    k.f32s(at(O::out), n, "rows × channels");
    k.f32s(at(O::w), k.product({d.channels, d.kernel}, "channels × kernel"), "channels × kernel");
    k.slot_rows(d.rows);
    if (d.kernel > 1)
        k.parts(at(O::window), d.rows, k.product({d.channels, d.kernel - 1, 4}, "a window"),
                "sequences of channels × (kernel − 1) f32");
}

/// Elementwise commands: every operand `rows × width` f32.
template <class S>
void elementwise(const Check& k, const Args<S>& a) {
    auto n = k.product({a.dims.rows, a.dims.width}, "rows × width");
    for (std::size_t i = 0; i < S::operand_count; ++i)
        k.f32s(i, n, "rows × width");
}
void shapes(const Check& k, const Args<slots::Silu>& a) {
    elementwise(k, a);
}
void shapes(const Check& k, const Args<slots::SigmoidGate>& a) {
    elementwise(k, a);
}
void shapes(const Check& k, const Args<slots::SiluMul>& a) {
    elementwise(k, a);
}
void shapes(const Check& k, const Args<slots::SwigluClamp>& a) {
    elementwise(k, a);
    if (k.config() && !k.config()->units.silu_mul.clamp)
        k.fail("the card's SiLU-multiply unit computes no clamped SwiGLU (units.silu_mul.clamp is false)");
    if (!(a.params.limit > 0) || !std::isfinite(a.params.limit) || !std::isfinite(a.params.alpha))
        k.fail(
            fmt::format("params limit {} and alpha {}: a positive finite limit and a finite alpha expected",
                        a.params.limit, a.params.alpha));
}
void shapes(const Check& k, const Args<slots::Add>& a) {
    elementwise(k, a);
}
void shapes(const Check& k, const Args<slots::Gelu>& a) {
    elementwise(k, a);
}

void shapes(const Check& k, const Args<slots::GeGlu>& a) {
    using O = slots::GeGlu::Operand;
    auto n = k.product({a.dims.rows, a.dims.width}, "rows × width");
    k.f32s(at(O::x), k.product({n, 2}, "rows × 2 × width"), "rows × 2 × width");
    k.f32s(at(O::out), n, "rows × width");
}

void shapes(const Check& k, const Args<slots::ArgMax>& a) {
    using O = slots::ArgMax::Operand;
    k.at_least("width", a.dims.width, 1);
    k.f32s(at(O::x), k.product({a.dims.rows, a.dims.width}, "rows × width"), "rows × width");
    k.f32s(at(O::out), a.dims.rows, "rows");
}

void shapes(const Check& k, const Args<slots::L2Norm>& a) {
    using O = slots::L2Norm::Operand;
    k.groups(a.dims.width, a.dims.group);
    auto n = k.product({a.dims.rows, a.dims.width}, "rows × width");
    k.f32s(at(O::x), n, "rows × width");
    k.f32s(at(O::out), n, "rows × width");
}

void shapes(const Check& k, const Args<slots::Gates>& a) {
    using O = slots::Gates::Operand;
    auto& d = a.dims;
    k.at_least("heads", d.heads, 1);
    auto n = k.product({d.rows, d.heads}, "rows × heads");
    for (auto o : {O::b, O::a, O::beta, O::g})
        k.f32s(at(o), n, "rows × heads");
    k.f32s(at(O::a_log), d.heads, "heads");
    k.f32s(at(O::dt_bias), d.heads, "heads");
}

void shapes(const Check& k, const Args<slots::DeltaStep>& a) {
    using O = slots::DeltaStep::Operand;
    auto& d = a.dims;
    k.at_least("rows", d.rows, 1);
    k.at_least("key_heads", d.key_heads, 1);
    k.at_least("dk", d.dk, 1);
    k.at_least("dv", d.dv, 1);
    if (d.value_heads == 0 || d.value_heads % d.key_heads != 0)
        k.fail(fmt::format("dim value_heads {} is not a positive multiple of key_heads {}", d.value_heads,
                           d.key_heads));
    auto qk = k.product({d.rows, d.key_heads, d.dk}, "rows × key_heads × dk");
    k.f32s(at(O::q), qk, "rows × key_heads × dk");
    k.f32s(at(O::k), qk, "rows × key_heads × dk");
    auto v = k.product({d.rows, d.value_heads, d.dv}, "rows × value_heads × dv");
    k.f32s(at(O::v), v, "rows × value_heads × dv");
    k.f32s(at(O::out), v, "rows × value_heads × dv");
    const auto heads = k.product({d.rows, d.value_heads}, "rows × value_heads");
    k.f32s(at(O::beta), heads, "rows × value_heads");
    k.f32s(at(O::g), heads, "rows × value_heads");
    k.slot_rows(d.rows);
    if (k.config())
        k.parts(
            at(O::state), d.rows,
            k.product({d.value_heads, d.dk, d.dv, kernels::state_element_bytes(k.config()->numerics.state)},
                      "the state"),
            "each of rows sequences' value_heads × dk × dv state elements");
}

void shapes(const Check& k, const Args<slots::GatedNorm>& a) {
    using O = slots::GatedNorm::Operand;
    k.groups(a.dims.width, a.dims.group);
    auto n = k.product({a.dims.rows, a.dims.width}, "rows × width");
    k.f32s(at(O::x), n, "rows × width");
    k.f32s(at(O::z), n, "rows × width");
    k.f32s(at(O::out), n, "rows × width");
    k.f32s(at(O::w), a.dims.group, "group");
}

void shapes(const Check& k, const Args<slots::AddType>& a) {
    using O = slots::AddType::Operand;
    auto& d = a.dims;
    k.at_least("seqs", d.seqs, 1);
    k.at_least("width", d.width, 1);
    k.f32s(at(O::h), k.product({d.rows, d.width}, "rows × width"), "rows × width");
    k.rows_of(at(O::table), k.product({d.width, 4}, "width"), "rows of width f32");
    k.u32s(at(O::qtype), d.seqs, "seqs");
    k.u32s(at(O::seq_starts), d.seqs + 1, "seqs + 1");
}

void shapes(const Check& k, const Args<slots::GatherMarkers>& a) {
    using O = slots::GatherMarkers::Operand;
    auto& d = a.dims;
    k.at_least("width", d.width, 1);
    k.rows_of(at(O::h), k.product({d.width, 4}, "width"), "rows of width f32");
    k.u32s(at(O::marker_rows), d.markers, "markers");
    k.f32s(at(O::out), k.product({d.markers, d.width}, "markers × width"), "markers × width");
}

void shapes(const Check& k, const Args<slots::Send>& a) {
    if (a.operands.x.bytes == 0) k.fail("sends no bytes, expected at least one");
}

void shapes(const Check& k, const Args<slots::Recv>& a) {
    if (a.operands.out.bytes == 0) k.fail("receives no bytes, expected at least one");
}

void shapes(const Check& k, const Args<slots::RecvAdd>& a) {
    if (a.operands.out.bytes == 0 || a.operands.out.bytes % 4)
        k.fail(fmt::format("adds {} bytes, expected a positive number of f32", a.operands.out.bytes));
}

void shapes(const Check& k, const Args<slots::SumPartials>& a) {
    using O = slots::SumPartials::Operand;
    auto& d = a.dims;
    k.at_least("elements", d.elements, 1);
    k.at_least("parts", d.parts, 2);
    k.bytes(at(O::x), k.product({d.elements, 24}, "elements × 24"), "elements exact parts of 24 bytes");
    k.bytes(at(O::others), k.product({d.parts - 1, d.elements, 24}, "(parts − 1) × elements × 24"),
            "(parts − 1) × elements exact parts of 24 bytes");
    k.f32s(at(O::out), d.elements, "elements");
}

void shapes(const Check& k, const Args<slots::ActFeatures>& a) {
    using O = slots::ActFeatures::Operand;
    auto& d = a.dims;
    k.at_least("seqs", d.seqs, 1);
    k.at_least("width", d.width, 1);
    k.rows_of(at(O::h), k.product({d.width, 4}, "width"), "rows of width f32");
    k.u32s(at(O::seq_starts), d.seqs + 1, "seqs + 1");
    k.u32s(at(O::marker_starts), d.seqs + 1, "seqs + 1");
    k.f32s(at(O::out), k.product({d.seqs, d.width + 4}, "seqs × (width + 4)"), "seqs × (width + 4)");
}

void shapes(const Check& k, const Args<slots::Route>& a) {
    using O = slots::Route::Operand;
    auto& d = a.dims;
    k.at_least("rows", d.rows, 1);
    k.at_least("top_k", d.top_k, 1);
    if (d.top_k > d.experts) k.fail(fmt::format("dim top_k {} exceeds experts {}", d.top_k, d.experts));
    if (d.all > 1) k.fail(fmt::format("dim all is {}, expected 0 or 1", d.all));
    k.f32s(at(O::logits), k.product({d.rows, d.experts}, "rows × experts"), "rows × experts");
    k.f32s(at(O::experts), k.product({d.rows, d.top_k}, "rows × top_k"), "rows × top_k");
    k.f32s(at(O::weights), k.product({d.rows, d.top_k}, "rows × top_k"), "rows × top_k");
}

void shapes(const Check& k, const Args<slots::ExpertMatvec>& a) {
    using O = slots::ExpertMatvec::Operand;
    auto& d = a.dims;
    k.at_least("rows", d.rows, 1);
    k.at_least("top_k", d.top_k, 1);
    k.at_least("n", d.n, 1);
    k.at_least("k", d.k, 1);
    k.at_least("n1", d.n1, 1);
    k.at_least("experts", d.experts, 1);
    if (d.top_k > d.routed) k.fail(fmt::format("dim top_k {} exceeds routed {}", d.top_k, d.routed));
    if (d.first > d.routed || d.experts > d.routed - d.first)
        k.fail(fmt::format("dims first {} + experts {} exceed routed {}", d.first, d.experts, d.routed));
    if (d.per_slot > 1) k.fail(fmt::format("dim per_slot is {}, expected 0 or 1", d.per_slot));
    if (d.n1 > d.n) k.fail(fmt::format("dim n1 {} exceeds n {}", d.n1, d.n));
    const auto slots = k.product({d.rows, d.top_k}, "rows × top_k");
    k.f32s(at(O::x), k.product({d.per_slot ? slots : d.rows, d.k}, "input rows × k"), "input rows × k");
    k.f32s(at(O::choice), slots, "rows × top_k");
    k.bytes(at(O::table), k.product({d.experts, 8}, "experts × 8"), "experts u64");
    k.f32s(at(O::out), k.product({slots, d.n1}, "rows × top_k × n1"), "rows × top_k × n1");
    if (d.n1 < d.n)
        k.f32s(at(O::out2), k.product({slots, d.n - d.n1}, "rows × top_k × (n − n1)"),
               "rows × top_k × (n − n1)");
    else
        k.absent(at(O::out2), "and n1 is n");
    k.absent_or_f32s(at(O::bias), k.product({d.experts, d.n}, "experts × n"), "experts × n");
    if (a.operands.bias.region != Region::None && k.config() && !k.config()->units.matvec.bias)
        k.fail("adds biases, and the card's matvec unit adds no bias (units.matvec.bias is false)");
    if (k.config()) {
        const auto matrix = packed_bytes(k, d.n, d.k);
        if (d.stride < matrix)
            k.fail(fmt::format("dim stride {} is less than a matrix's {} bytes", d.stride, matrix));
        k.bytes(at(O::experts), k.product({d.experts - 1, d.stride}, "(experts − 1) × stride") + matrix,
                "(experts − 1) × stride + a packed n × k matrix");
    }
}

void shapes(const Check& k, const Args<slots::Combine>& a) {
    using O = slots::Combine::Operand;
    auto& d = a.dims;
    k.at_least("rows", d.rows, 1);
    k.at_least("top_k", d.top_k, 1);
    k.at_least("width", d.width, 1);
    k.f32s(at(O::weights), k.product({d.rows, d.top_k}, "rows × top_k"), "rows × top_k");
    k.f32s(at(O::outs), k.product({d.rows, d.top_k, d.width}, "rows × top_k × width"),
           "rows × top_k × width");
    k.absent_or_f32s(at(O::shared), k.product({d.rows, d.width}, "rows × width"), "rows × width");
    k.absent_or_f32s(at(O::gate), d.rows, "rows");
    if (a.operands.gate.region != Region::None && a.operands.shared.region == Region::None)
        k.fail("operand gate is present without the shared expert it scales");
    if (k.flags() & flag::Partial) // one card's exact parts under expert parallelism, 24 bytes each
        k.bytes(at(O::out), k.product({d.rows, d.width, 24}, "rows × width × 24"),
                "rows × width exact parts of 24 bytes");
    else
        k.f32s(at(O::out), k.product({d.rows, d.width}, "rows × width"), "rows × width");
}

/// The flags each opcode takes.
std::uint32_t flags_of(Opcode op) {
    switch (op) {
    case Opcode::RmsNorm:
        return flag::ZeroCentred;
    case Opcode::Matvec:
        return flag::Accumulate | flag::EpilogueGelu | flag::EpilogueRelu | flag::Partial;
    case Opcode::Conv:
        return flag::FusedSilu;
    case Opcode::Combine:
        return flag::Partial;
    default:
        return 0;
    }
}

/// Checks command `i` of `p`.
void check_command(const Program&, const Command& c, std::size_t i, const std::string& file,
                   const card::CardConfig* config) {
    Check k(c, i, file, config);
    auto& s = spec(c.opcode);
    if (c.operands.size() != s.operands.size() || c.dims.size() != s.dims.size() ||
        c.params.size() != s.params.size())
        k.fail("its slot counts are not the opcode's");
    if (c.unit != s.unit)
        k.fail(fmt::format("runs on the {} unit, {} commands run on the {} unit", card::name(c.unit), s.name,
                           card::name(s.unit)));
    if (auto extra = c.flags & ~flags_of(c.opcode))
        k.fail(fmt::format("has flag bits {:#x}, which {} does not take (it takes {:#x})", extra, s.name,
                           flags_of(c.opcode)));
    if ((c.flags & flag::EpilogueGelu) && (c.flags & flag::EpilogueRelu))
        k.fail("has both the GELU and the ReLU epilogue, expected at most one");
    for (std::size_t d = 0; d < c.dims.size(); ++d)
        if (c.dims[d] > max_dim) k.fail(fmt::format("dim {} is {}, past 2^32", s.dims[d], c.dims[d]));
    with_slots(c.opcode, [&](auto slot) { shapes(k, args<decltype(slot)>(c)); });
}

/// The rows of the embedding table (`config` known), or nothing.
std::optional<std::uint64_t> table_rows(const Command& c, const card::CardConfig* config) {
    if (!config || c.opcode != Opcode::Embed) return std::nullopt;
    auto a = args<slots::Embed>(c);
    return a.operands.table.bytes / kernels::matrix_layout(*config, 1, a.dims.width).bytes();
}

} // namespace

void validate(const Program& p, const card::CardConfig* config, const std::string& file) {
    auto fail = [&](const std::string& where, const std::string& what) {
        throw Error(fmt::format("{}: {}: {}", file, where, what));
    };
    auto* arena = p.region(Region::Arena);
    if (!arena || arena->space != Space::Sram)
        fail("memory map", "has no arena region in SRAM, expected one (the activations)");
    if (p.arena_bytes != arena->size)
        fail("header", fmt::format("arena {} bytes, the arena region holds {}", p.arena_bytes, arena->size));
    if (auto* pr = p.region(Region::Program); pr && pr->size != card_bytes(p))
        fail("memory map",
             fmt::format("the program region holds {} bytes, the header, map and commands take {}", pr->size,
                         card_bytes(p)));
    if (config) {
        for (auto& r : p.regions) {
            auto cap = r.space == Space::Ddr ? config->ddr.total_bytes() : config->sram.bytes;
            if (r.base > cap || r.size > cap - r.base)
                fail("memory map", fmt::format("region {} ends at {:#x}, past the card's {} of {} bytes "
                                               "(ddr.capacity_mib × ddr.channels, sram.bytes)",
                                               name(r.kind), r.base + r.size, name(r.space), cap));
        }
    }
    for (std::size_t i = 0; i < p.commands.size(); ++i)
        check_command(p, p.commands[i], i, file, config);
    // The host map against the commands.
    auto& h = p.host;
    if (h.vocab >= max_dim)
        fail("host map", fmt::format("vocab {} is past 2^32 (token ids are u32)", h.vocab));
    for (std::size_t i = 0; i < p.commands.size(); ++i) {
        auto& c = p.commands[i];
        auto where = fmt::format("host map (command {}, {})", i, name(c.opcode));
        if (c.opcode == Opcode::Embed) {
            if (h.vocab < 2) fail(where, fmt::format("vocab {}, an embedding needs at least 2 ids", h.vocab));
            if (auto rows = table_rows(c, config); rows && h.vocab > *rows)
                fail(where, fmt::format("vocab {} is past the embedding table's {} rows", h.vocab, *rows));
        }
        std::uint64_t positions = 0;
        if (c.opcode == Opcode::CacheAppend) positions = args<slots::CacheAppend>(c).dims.max_positions;
        if (c.opcode == Opcode::Attend) positions = args<slots::Attend>(c).dims.max_positions;
        if (positions && positions != h.max_positions)
            fail(where,
                 fmt::format("max positions {}, the command's cache holds {}", h.max_positions, positions));
    }
}

} // namespace cardsim::program
