#pragma once
// The pack cache: the packed weights of a checkpoint in one weight format, kept in a directory so
// that lowering the same checkpoint again (a sweep over timing or clock knobs) never packs twice.
//
// An entry is one file `<checkpoint digest>-<format>-<packing digest>-<keys digest>.pack` (hex
// digests): the checkpoint's digest (models::checkpoint_digest), the weight format (`int8-e8m0-g32`),
// the xxh64 of every config value the packed bytes depend on (the format and the row alignment) and
// the xxh64 of the lowering's job keys and sizes (pack_keys_digest), so each card of a plan, and each
// lowering that packs another set of chunks, has an entry of its own rather than overwriting one. It
// holds every packed chunk under its job key (the tensors, views and storing: lowering's Job::key)
// and ends with the xxh64 of all the bytes before it. File layout, version 2 (little-endian): magic
// "CARDPACK" (8 B), version u32, entry count u32, data offset u64, per entry { key length u32, key,
// length u64, offset u64 }, zeros up to the data offset, the data area (each entry's bytes at its
// offset, every other byte zero), xxh64 u64. The writer lays the data area out as a mirror of the
// DDR addresses its lowering gave the chunks (program::mirror_fits; else end to end), so a run that
// places them at the same addresses reads the entry in place as its image: the entry's pages are
// lent to the card's DDR, with no copy. Entries are written to a temporary beside them and renamed
// into place, so
// concurrent processes each see a whole entry or none; one whose checksum or layout is wrong is
// ignored (and rewritten by the lowering that finds it so). A lowering that misses takes the entry's
// lock (PackLock) before packing, so processes that miss the same entry at once pack it once: the
// others wait and then read it. The cache is bounded: after an entry is written, the least recently
// used others are removed until all fit `CARDSIM_PACK_CACHE_MAX` (64 GiB by default), and the
// temporaries of writers that died are removed. A cache that cannot be written (read-only, full)
// costs the caching only: lowering warns on stderr and goes on with the weights it packed.

#include "engine/program/image.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cardsim::lower {

/// The pack cache's size limit unless CARDSIM_PACK_CACHE_MAX says otherwise: 64 GiB (two packed
/// 32B models at int8).
inline constexpr std::uint64_t default_pack_cache_limit = std::uint64_t(64) << 30;

/// The pack cache directory the environment names: CARDSIM_PACK_CACHE, or empty (no cache).
std::filesystem::path pack_cache_from_environment();

/// The pack cache's size limit the environment names: CARDSIM_PACK_CACHE_MAX, bytes or a number
/// with a K, M, G or T suffix (powers of 1024); default_pack_cache_limit when unset. Anything else
/// is a cardsim::Error naming the variable.
std::uint64_t pack_cache_limit_from_environment();

/// Removes entries (`*.pack` files) of `dir`, least recently used first (by modification time,
/// which a hit refreshes), until those left take at most `limit` bytes; `keep` (the entry just
/// written) is never removed. Another process's entry may go while it reads it: its mapping stays
/// valid, and the next lowering packs again. Also removes the temporaries (`.NAME.pack.tmp-PID-N`)
/// of writers whose process is gone (killed mid-write: a sweep's timeout), which no entry's size
/// counts. Returns the bytes removed; never throws.
std::uint64_t evict_pack_entries(const std::filesystem::path& dir, std::uint64_t limit,
                                 const std::filesystem::path& keep);

/// Marks the entry at `path` used now (its modification time), for eviction's order.
void touch_pack_entry(const std::filesystem::path& path);

/// The xxh64 of a lowering's job keys and their sizes, in order: what names its entry's contents.
std::uint64_t pack_keys_digest(std::span<const std::string> keys, std::span<const std::uint64_t> sizes);

/// The cache file of `(checkpoint_digest, format, packing_digest, keys_digest)` in `dir`.
std::filesystem::path pack_cache_entry(const std::filesystem::path& dir, std::uint64_t checkpoint_digest,
                                       const std::string& format, std::uint64_t packing_digest,
                                       std::uint64_t keys_digest);

/// The lock of one entry, held while a lowering that missed it packs and writes it: an exclusive
/// flock on `DIR/.locks/NAME.lock` (created if need be; the kernel releases it when its process
/// ends, however it ends). Taking it waits for another process that holds it. When the lock file
/// cannot be made (a read-only cache), it holds nothing: lowering then packs unlocked, as it would
/// with no other process.
class PackLock {
public:
    explicit PackLock(const std::filesystem::path& entry);
    ~PackLock();
    PackLock(const PackLock&) = delete;
    PackLock& operator=(const PackLock&) = delete;

private:
    int fd_ = -1;
};

/// Hands the bytes of each key in `keys` from the entry at `path` to `put(k, at, bytes)` (bytes
/// [at, at + bytes.size()) of key k's `sizes[k]`, in pieces, every byte once) in one pass over the
/// file that checks its checksum on the way (`pread` into a buffer of 1 MiB: no mapping, whose
/// first touches cost more than the copies on a virtual machine). True when the entry was whole.
/// False when the file is missing, lacks a key, a key's bytes are not `sizes[k]` long or its
/// magic, version or table are wrong, or its table is longer than these keys' (before anything is
/// handed or allocated by the file's word), or when its checksum is wrong
/// (found at the end: the caller then fills every key's bytes again). Never throws for a bad
/// entry (`put` may).
bool read_pack_entry(
    const std::filesystem::path& path, std::span<const std::string> keys,
    std::span<const std::uint64_t> sizes,
    const std::function<void(std::size_t k, std::uint64_t at, std::span<const std::byte> bytes)>& put);

/// An entry read in place: its file mapped (private: a write never reaches it), and where each
/// key's bytes lie in it.
struct MappedEntry {
    std::shared_ptr<program::ImageMemory> memory;
    std::vector<std::uint64_t> offsets;
};

/// The entry at `path` mapped, when it holds every key of `keys` with `sizes[k]` bytes at the same
/// distance from `addresses[k]` (a mirror of those addresses) and zeros between them: the chunks
/// are then ranges of it that the card's DDR reads in place. Nothing when it does not, or as for
/// read_pack_entry; checked whole (its checksum) first. Never throws for a bad entry.
std::optional<MappedEntry> map_pack_entry(const std::filesystem::path& path,
                                          std::span<const std::string> keys,
                                          std::span<const std::uint64_t> sizes,
                                          std::span<const std::uint64_t> addresses);

/// Writes the entry at `path` (its directory created if need be) holding `*chunks[k]` under
/// `keys[k]`, its data area a mirror of `addresses[k]` (the chunks' DDR addresses, increasing) where
/// program::mirror_fits, through a temporary renamed into place. Chunks that lie in an image file
/// being written are read through it (ChunkBytes::for_pieces). Throws cardsim::Error naming the
/// path.
void write_pack_entry(const std::filesystem::path& path, std::span<const std::string> keys,
                      std::span<const program::ChunkBytes* const> chunks,
                      std::span<const std::uint64_t> addresses);

} // namespace cardsim::lower
