#include "engine/program/program_set.hpp"

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"

#include <fmt/core.h>
#include <xxhash.h>

#include <cstring>

namespace cardsim::program {
namespace {

constexpr std::size_t set_header_bytes = 8 + 4 + 4;
constexpr std::size_t set_checksum_bytes = 8; ///< the xxh64 trailer of a program set

/// A region as text for refusals: `0x1000 + 4096 bytes`, or `none`.
std::string place(const RegionMap* r) {
    return r ? fmt::format("{:#x} + {} bytes", r->base, r->size) : "none";
}

/// The little-endian u64 at `at` of `b` (the caller checked it is there).
std::uint64_t u64_at(std::span<const std::byte> b, std::size_t at) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 8; ++i)
        v |= std::uint64_t(std::to_integer<unsigned>(b[at + i])) << (8 * i);
    return v;
}

/// Throws the error for `what` is wrong at `where` of `file`.
[[noreturn]] void refuse(const std::string& file, const std::string& where, const std::string& what) {
    throw Error(fmt::format("{}: {}: {}", file, where, what));
}

/// Appends `v` little-endian.
template <class T>
void put(std::vector<std::byte>& out, T v) {
    for (std::size_t i = 0; i < sizeof(T); ++i)
        out.push_back(std::byte((std::uint64_t(v) >> (8 * i)) & 0xff));
}

} // namespace

std::optional<std::string> share_refusal(std::span<const Program* const> buckets) {
    if (buckets.empty()) return "a set needs at least one bucket";
    auto& first = *buckets.front();
    for (std::size_t k = 1; k < buckets.size(); ++k) {
        auto& p = *buckets[k];
        if (p.image_digest != first.image_digest)
            return fmt::format("bucket {} runs on another DDR image ({:016x}) than bucket 0 ({:016x})", k,
                               p.image_digest, first.image_digest);
        if (p.config_digest != first.config_digest)
            return fmt::format("bucket {} was compiled for another card config than bucket 0", k);
        for (auto kind : {Region::Weights, Region::Caches, Region::State}) {
            auto *a = first.region(kind), *b = p.region(kind);
            if (!a != !b || (a && *a != *b))
                return fmt::format("bucket {}'s {} region ({}) is not bucket 0's ({}): the buckets of a set "
                                   "share their weights and stores",
                                   k, name(kind), place(b), place(a));
        }
        for (std::size_t j = 0; j < k; ++j) {
            auto *a = buckets[j]->region(Region::Program), *b = p.region(Region::Program);
            if (a && b && a->size && b->size && a->base < b->base + b->size && b->base < a->base + a->size)
                return fmt::format("bucket {}'s program region overlaps bucket {}'s", k, j);
        }
    }
    return std::nullopt;
}

std::optional<std::string> set_refusal(const ProgramSet& s) {
    if (s.buckets.empty() || s.buckets.size() > max_set_buckets)
        return fmt::format("{} buckets, a set holds 1 .. {}", s.buckets.size(), max_set_buckets);
    std::vector<const Program*> ptrs;
    for (auto& p : s.buckets)
        ptrs.push_back(&p);
    if (auto why = share_refusal(ptrs)) return why;
    auto& first = s.buckets.front();
    for (std::size_t k = 0; k < s.buckets.size(); ++k) {
        auto& p = s.buckets[k];
        auto& h = p.host;
        auto* slots = h.entry(IoRole::Slots);
        if (!slots)
            return fmt::format("bucket {} has no slots input: a set's buckets address the stores by slot "
                               "(compile with --rows)",
                               k);
        if (h.seqs != 1 || h.markers != 0)
            return fmt::format("bucket {} holds {} sequences and {} markers: a set's buckets are token rows "
                               "of one sequence each (seqs 1, markers 0)",
                               k, h.seqs, h.markers);
        if (k == 0) continue;
        auto& f = first.host;
        if (h.tokens <= s.buckets[k - 1].host.tokens)
            return fmt::format("bucket {} has {} token rows after bucket {}'s {}: the buckets are in "
                               "increasing order of token rows",
                               k, h.tokens, k - 1, s.buckets[k - 1].host.tokens);
        if (slots->width != f.entry(IoRole::Slots)->width)
            return fmt::format("bucket {}'s stores hold {} slots, bucket 0's {}", k, slots->width,
                               f.entry(IoRole::Slots)->width);
        if (h.max_positions != f.max_positions)
            return fmt::format("bucket {}'s slots hold {} positions, bucket 0's {}", k, h.max_positions,
                               f.max_positions);
        if (h.vocab != f.vocab || h.model != f.model || h.checkpoint_digest != f.checkpoint_digest)
            return fmt::format("bucket {} was compiled from another model than bucket 0 ({}, vocab {}, "
                               "checkpoint {:016x}; bucket 0: {}, vocab {}, checkpoint {:016x})",
                               k, h.model, h.vocab, h.checkpoint_digest, f.model, f.vocab,
                               f.checkpoint_digest);
        if (p.arena_bytes != first.arena_bytes)
            return fmt::format("bucket {}'s arena is {} bytes, bucket 0's {}: a set's arena is sized for "
                               "its largest bucket",
                               k, p.arena_bytes, first.arena_bytes);
        auto *a = first.region(Region::Io), *b = p.region(Region::Io);
        if (!a != !b || (a && *a != *b))
            return fmt::format("bucket {}'s io region ({}) is not bucket 0's ({}): a set's buckets share one",
                               k, place(b), place(a));
    }
    return std::nullopt;
}

bool is_set(std::span<const std::byte> bytes) {
    return bytes.size() >= sizeof set_magic && std::memcmp(bytes.data(), set_magic, sizeof set_magic) == 0;
}

std::vector<std::byte> encode(const ProgramSet& s) {
    std::vector<std::byte> out;
    for (char c : set_magic)
        out.push_back(std::byte(c));
    put(out, set_version);
    put(out, std::uint32_t(s.buckets.size()));
    for (auto& p : s.buckets) {
        auto bytes = encode(p);
        put(out, std::uint64_t(bytes.size()));
        out.insert(out.end(), bytes.begin(), bytes.end());
    }
    put(out, std::uint64_t(XXH64(out.data(), out.size(), 0)));
    return out;
}

ProgramSet decode_set(std::span<const std::byte> bytes, const std::string& file) {
    auto fail = [&](const std::string& where, const std::string& what) { refuse(file, where, what); };
    if (bytes.size() < set_header_bytes + set_checksum_bytes)
        fail("header", fmt::format("truncated: a set file has at least {} bytes, this one {}",
                                   set_header_bytes + set_checksum_bytes, bytes.size()));
    if (!is_set(bytes)) fail("header", "wrong magic: this is not a cardsim program set");
    std::uint32_t version = 0, count = 0;
    for (std::size_t i = 0; i < 4; ++i) {
        version |= std::uint32_t(std::to_integer<unsigned>(bytes[8 + i])) << (8 * i);
        count |= std::uint32_t(std::to_integer<unsigned>(bytes[12 + i])) << (8 * i);
    }
    if (version != set_version)
        fail("header",
             fmt::format("set format version {}, this build reads version {}", version, set_version));
    const auto body = bytes.first(bytes.size() - set_checksum_bytes);
    const auto stored = u64_at(bytes, body.size());
    if (auto actual = XXH64(body.data(), body.size(), 0); stored != actual)
        fail("checksum", fmt::format("the file ends in checksum {:016x}, its bytes hash to {:016x}: the file "
                                     "is damaged or truncated (compile it again)",
                                     stored, actual));
    if (count == 0 || count > max_set_buckets)
        fail("header", fmt::format("{} buckets, a set holds 1 .. {}", count, max_set_buckets));
    ProgramSet s;
    std::size_t at = set_header_bytes;
    for (std::uint32_t k = 0; k < count; ++k) {
        auto where = fmt::format("bucket {}", k);
        if (body.size() - at < 8)
            fail(where, fmt::format("truncated: its length field at offset {} runs past the file", at));
        const auto length = u64_at(body, at);
        at += 8;
        if (length > body.size() - at)
            fail(where, fmt::format("its {} bytes at offset {} run past the file ({} bytes are left)", length,
                                    at, body.size() - at));
        s.buckets.push_back(
            decode(body.subspan(at, std::size_t(length)), fmt::format("{} ({})", file, where)));
        at += std::size_t(length);
    }
    if (at != body.size())
        fail("end", fmt::format("{} bytes after the last bucket, before the checksum", body.size() - at));
    if (auto why = set_refusal(s)) fail("set", *why);
    return s;
}

void write(const ProgramSet& s, const std::filesystem::path& path) {
    io::write_file_atomically(path, encode(s));
}

ProgramSet read_set(const std::filesystem::path& path) {
    return decode_set(io::read_bytes(path), path.string());
}

std::string rows_list(const ProgramSet& s) {
    std::string o;
    for (auto& p : s.buckets)
        o += fmt::format("{}{}", o.empty() ? "" : ",", p.host.tokens);
    return o;
}

} // namespace cardsim::program
