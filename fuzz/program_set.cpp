// Fuzz target: a program set file. The input is a set file without its checksums: the target
// seals each bucket's program file with its checksum where the bucket lengths make one out, then
// the set with its own, so mutations reach the set checks and every bucket's fields; then each
// decoded bucket is validated against the default card config and its io map built.
#include "engine/program/program_set.hpp"
#include "engine/card/card_config.hpp"
#include "engine/program/io_map.hpp"
#include "engine/program/validate.hpp"
#include "fuzz/support.hpp"

#include <xxhash.h>

#include <vector>

namespace {

/// The little-endian u64 at `at` of `b`.
std::uint64_t u64_at(const std::vector<std::byte>& b, std::size_t at) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 8; ++i)
        v |= std::uint64_t(std::to_integer<unsigned>(b[at + i])) << (8 * i);
    return v;
}

/// Appends (or writes at `at`) xxh64 of `b[from, from + n)`.
void seal(std::vector<std::byte>& b, std::size_t from, std::size_t n, std::size_t at) {
    const std::uint64_t h = XXH64(b.data() + from, n, 0);
    if (b.size() < at + 8) b.resize(at + 8);
    for (std::size_t i = 0; i < 8; ++i)
        b[at + i] = std::byte((h >> (8 * i)) & 0xff);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace cardsim;
    static const card::CardConfig config = card::default_card_config();
    std::vector<std::byte> file(reinterpret_cast<const std::byte*>(data),
                                reinterpret_cast<const std::byte*>(data) + size);
    // Each bucket: a length, then a program file whose last 8 bytes are its checksum.
    for (std::size_t at = 16; at + 8 <= file.size();) {
        const auto length = u64_at(file, at);
        at += 8;
        if (length < 8 || length > file.size() - at) break;
        seal(file, at, std::size_t(length) - 8, at + std::size_t(length) - 8);
        at += std::size_t(length);
    }
    seal(file, 0, file.size(), file.size());
    return fuzz::refusing([&] {
        auto s = program::decode_set(file, "fuzz.cardset");
        for (auto& p : s.buckets) {
            program::validate(p, &config, "fuzz.cardset");
            (void)program::io_map(p.host);
        }
        (void)program::rows_list(s);
    });
}
