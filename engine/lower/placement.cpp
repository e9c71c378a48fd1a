// The lowering's DDR regions: states, io, weights (packed by jobs), the regions and the host map
// (lowering.hpp).

#include "engine/lower/lowering.hpp"

#include "engine/kernels/kernels.hpp"
#include "engine/kernels/parallel.hpp"
#include "engine/lower/pack_cache.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <numeric>
#include <optional>

namespace cardsim::lower::detail {
namespace {

/// The host map entry of an io place.
program::IoEntry entry(program::IoRole role, const Place& p) {
    program::IoEntry e;
    e.role = role;
    e.offset = p.offset;
    e.bytes = p.bytes;
    return e;
}

} // namespace

std::vector<bool> states_kept(const Graph& g, const std::optional<Stage>& stage) {
    std::vector<bool> used(g.states.size(), !stage);
    if (stage)
        for (std::size_t i = stage->first_op; i < stage->end_op; ++i) {
            auto u = state_uses(g.ops[i]);
            for (auto s : u.reads)
                used[s.id] = true;
            for (auto s : u.writes)
                used[s.id] = true;
        }
    return used;
}

void Lowering::place_states() {
    const std::size_t seqs = store_sequences();
    // One card's part of a plan keeps the stores of its own ops only.
    const auto used = states_kept(g_, o_.stage);
    for (std::size_t k = 0; k < g_.states.size(); ++k) {
        const auto& s = g_.states[k];
        const bool cache = std::holds_alternative<KeyCache>(s) || std::holds_alternative<ValueCache>(s);
        const Region region = cache ? Region::Caches : Region::State;
        const std::uint64_t per_seq =
            state_bytes(s, o_.max_positions, t_.storage.cache_row_bytes, t_.storage.state_element_bytes);
        auto& end = region == Region::Caches ? caches_end_ : state_end_;
        // Each sequence's part on the program format's line (the kernels find it by it); the
        // store itself on the card's burst.
        Place p{region, end, used[k] ? align_up(per_seq, kernels::sequence_line) * seqs : 0};
        end = align_up(end + p.bytes, t_.line);
        out_.states.push_back(p);
    }
}

Place Lowering::io(std::uint64_t bytes) {
    Place p{Region::Io, io_end_, bytes};
    io_end_ = align_up(io_end_ + bytes, t_.line);
    return p;
}

void Lowering::place_io() {
    auto& b = o_.bucket;
    auto& m = out_.io;
    m.ids = io(4 * b.tokens);
    m.positions = io(4 * b.tokens);
    m.seq_starts = io(4 * (b.seqs + 1));
    m.qtype = io(4 * b.seqs);
    m.marker_rows = io(4 * b.markers);
    m.marker_starts = io(4 * (b.seqs + 1));
    if (o_.slots) {
        if (*o_.slots == 0 || *o_.slots >= 0xffffffffu)
            throw Error(fmt::format("slots = {}: expected 1 .. 2^32 - 2", *o_.slots));
        m.slots = io(4 * b.tokens);
        m.slot_count = *o_.slots;
    }
    for (auto v : g_.outputs())
        m.outputs.emplace_back(v, io(4 * rows(v) * width(v)));
    for (auto& p : o_.probes) {
        m.outputs.emplace_back(p.value, io(4 * rows(p.value) * width(p.value)));
        m.probes.push_back(p);
    }
}

void Destination::put(std::uint64_t offset, std::span<const std::byte> bytes) const {
    if (offset > size_ || bytes.size() > size_ - offset)
        throw Error(fmt::format("a weight chunk of {} bytes was given {} bytes at offset {}", size_,
                                bytes.size(), offset));
    if (file_)
        file_->write(address_ + offset, bytes);
    else
        std::copy(bytes.begin(), bytes.end(), memory_.begin() + static_cast<std::ptrdiff_t>(offset));
}

Place Lowering::reserve(std::uint64_t bytes, bool stripe, std::string key, Fill fill) {
    std::uint64_t at = align_up(weights_end_, stripe ? t_.stripe() : t_.line);
    Place p{Region::Weights, at, bytes};
    weights_end_ = at + bytes;
    if (o_.shapes_only) return p; // placed by its shape and format: never read nor packed
    out_.image.chunks.push_back(program::Chunk{at, {}}); // the region's base is 0
    jobs_.push_back(Job{out_.image.chunks.size() - 1, bytes, std::move(key), std::move(fill)});
    return p;
}

void Lowering::run_jobs() {
    const bool cached =
        !o_.pack_cache.empty() && o_.checkpoint_digest != 0 && !t_.pack_format.empty() && !jobs_.empty();
    std::filesystem::path entry;
    std::vector<std::string> keys;
    std::vector<std::uint64_t> sizes, addresses;
    // Without a file to write (a run, not a compile), an entry that mirrors these addresses is the
    // image itself: its pages are read in place, never copied.
    auto map_entry = [&] {
        if (o_.image_file) return false;
        auto mapped = map_pack_entry(entry, keys, sizes, addresses);
        if (!mapped) return false;
        for (std::size_t k = 0; k < jobs_.size(); ++k)
            out_.image.chunks[jobs_[k].chunk].bytes =
                program::ChunkBytes(mapped->memory, mapped->offsets[k], jobs_[k].bytes);
        out_.packed_from_cache = true;
        touch_pack_entry(entry); // used now: the last the cache evicts
        out_.program.image_digest = digest(out_.image);
        return true;
    };
    std::optional<PackLock> lock;
    if (cached) {
        for (auto& job : jobs_) {
            keys.push_back(job.key);
            sizes.push_back(job.bytes);
            addresses.push_back(out_.image.chunks[job.chunk].address);
        }
        entry = pack_cache_entry(o_.pack_cache, o_.checkpoint_digest, t_.pack_format, t_.pack_digest,
                                 pack_keys_digest(keys, sizes));
        if (map_entry()) return;
        // A miss packs under the entry's lock; a process that held it has just written the entry.
        if (std::error_code ec; !std::filesystem::exists(entry, ec)) {
            lock.emplace(entry);
            if (map_entry()) return;
        }
    }
    // The chunks are written into the image file the caller gives, or are ranges of one image
    // memory committed up front so that packing takes no page faults; both start as zeros.
    program::ImageFile* file = nullptr;
    if (!jobs_.empty() && o_.image_file) {
        std::vector<program::Extent> extents;
        for (auto& job : jobs_)
            extents.push_back({out_.image.chunks[job.chunk].address, job.bytes});
        file = o_.image_file(o_.stage ? o_.stage->card : 0);
        if (file && !file->open(extents)) file = nullptr;
    }
    std::shared_ptr<program::ImageMemory> memory = file ? file->memory()
                                                   : jobs_.empty()
                                                       ? nullptr
                                                       : program::ImageMemory::create(weights_end_);
    for (auto& job : jobs_) {
        auto& chunk = out_.image.chunks[job.chunk];
        chunk.bytes = memory ? program::ChunkBytes(memory, chunk.address, job.bytes)
                             : program::ChunkBytes(std::vector<std::byte>(job.bytes));
    }
    auto destination = [&](const Job& job) {
        auto& chunk = out_.image.chunks[job.chunk];
        return file ? Destination(*file, chunk.address, job.bytes) : Destination(chunk.bytes);
    };
    // A damaged entry is found at its end, after some chunks were copied: packing fills them again.
    if (cached && read_pack_entry(entry, keys, sizes,
                                  [&](std::size_t k, std::uint64_t at, std::span<const std::byte> bytes) {
                                      destination(jobs_[k]).put(at, bytes);
                                  })) {
        out_.packed_from_cache = true;
        touch_pack_entry(entry); // used now: the last the cache evicts
        out_.program.image_digest = digest(out_.image);
        return;
    }
    if (cached && !lock) { // the entry was there but damaged or not ours: pack it once, locked
        lock.emplace(entry);
        if (map_entry()) return;
    }
    fill_and_digest(destination);
    if (!cached) return;
    std::vector<const program::ChunkBytes*> chunks;
    for (auto& job : jobs_)
        chunks.push_back(&out_.image.chunks[job.chunk].bytes);
    try {
        write_pack_entry(entry, keys, chunks, addresses);
    } catch (const Error& e) { // the weights are packed: only the caching is lost
        fmt::print(stderr, "cardsim: warning: the pack cache keeps nothing this time: {}\n", e.what());
        return;
    }
    evict_pack_entries(o_.pack_cache, o_.pack_cache_limit, entry);
}

void Lowering::fill_and_digest(const std::function<Destination(const Job&)>& destination) {
    const auto& chunks = out_.image.chunks;
    bool one_a_chunk = chunks.size() == jobs_.size();
    for (std::size_t k = 0; k < jobs_.size() && one_a_chunk; ++k)
        one_a_chunk = jobs_[k].chunk == k;
    if (!one_a_chunk || kernels::host_threads() < 2 || jobs_.size() < 2) {
        for (auto& job : jobs_)
            job.fill(destination(job));
        out_.program.image_digest = digest(out_.image);
        return;
    }
    // The follower hashes chunk k once job k is done, while the next ones are packed.
    program::ImageDigest hash(chunks.size());
    std::atomic<std::size_t> done{0};
    std::atomic<bool> stop{false};
    auto follower = std::async(std::launch::async, [&] {
        for (std::size_t k = 0; k < chunks.size(); ++k) {
            for (std::size_t d = done.load(); d <= k; d = done.load()) {
                if (stop) return;
                done.wait(d);
            }
            if (stop) return;
            hash.add(chunks[k]);
        }
    });
    try {
        for (std::size_t k = 0; k < jobs_.size(); ++k) {
            jobs_[k].fill(destination(jobs_[k]));
            done.store(k + 1);
            done.notify_one();
        }
    } catch (...) {
        stop = true;
        done.fetch_add(1);
        done.notify_one();
        follower.wait();
        throw;
    }
    follower.get(); // its failure (a read of the image file) is the lowering's
    out_.program.image_digest = hash.value();
}

std::vector<float> Lowering::values_of(const Weight& w, bool transpose_copy) const {
    auto shape = ws_.view_of(w.tensor, w.view);
    auto values = ws_.values_f32(w.tensor, w.view);
    ws_.release(w.tensor); // packed once: its mapped pages need not stay resident
    if (!transpose_copy) return values;
    return transpose(values, shape.rows, shape.row_len);
}

void Lowering::pack(const std::vector<Weight>& parts, bool transpose, std::size_t rows, std::size_t cols,
                    const Destination& out) const {
    auto release = [&] {
        for (auto& v : parts)
            ws_.release(v.tensor);
    };
    if (!t_.storage.pack_into) { // a packer of whole matrices: every value in f32 first
        std::vector<float> values;
        for (auto& v : parts) {
            auto part = values_of(v, transpose);
            values.insert(values.end(), part.begin(), part.end());
        }
        auto bytes = t_.storage.pack(values, rows, cols);
        if (bytes.size() != out.size())
            throw Error(
                fmt::format("a packed weight has {} bytes, {} were reserved", bytes.size(), out.size()));
        out.put(0, bytes);
        return;
    }
    if (rows == 0) return;
    const std::size_t stride = out.size() / rows;
    if (stride * rows != out.size())
        throw Error(fmt::format("a packed {} × {} weight of {} bytes is not {} equal rows", rows, cols,
                                out.size(), rows));
    // Blocks of about 16 Ki values: a block's f32 rows stay in the core's cache while it packs them.
    const std::size_t block = std::max<std::size_t>(1, 16384 / std::max<std::size_t>(cols, 1));
    std::vector<float> transposed; // a transposed part is read whole, as its rows are columns
    if (transpose)
        for (auto& v : parts) { // stacked: each part's rows (its columns) after the last's
            auto part = values_of(v, true);
            transposed.insert(transposed.end(), part.begin(), part.end());
        }
    if (transpose && transposed.size() != rows * cols)
        throw Error(fmt::format("a packed weight of {} × {} reads {} values of its tensors", rows, cols,
                                transposed.size()));
    std::vector<std::size_t> starts{0}; // the first matrix row of each part, and the end
    for (auto& v : parts)
        starts.push_back(starts.back() + (transpose ? 0 : ws_.view_of(v.tensor, v.view).rows));
    if (!transpose && starts.back() != rows)
        throw Error(
            fmt::format("a packed weight of {} rows reads {} rows of its tensors", rows, starts.back()));
    const auto direct = out.memory();
    constexpr std::size_t flush_bytes = std::size_t{256} << 10; // a file's pieces: a write each
    kernels::parallel_for(rows, block, [&](std::size_t begin, std::size_t end) {
        std::vector<float> buffer(std::min(block, end - begin) * cols);
        std::vector<std::byte> staged; // into a file: consecutive blocks' bytes, from row `staged_from`
        std::size_t staged_from = begin;
        auto flush = [&] {
            if (!staged.empty()) out.put(staged_from * stride, staged);
            staged_from += staged.size() / stride;
            staged.clear();
        };
        for (std::size_t first = begin; first < end; first += block) {
            const std::size_t n = std::min(block, end - first);
            std::span<float> values(buffer.data(), n * cols);
            if (transpose)
                std::copy_n(transposed.begin() + static_cast<std::ptrdiff_t>(first * cols), n * cols,
                            values.begin());
            else
                for (std::size_t r = first, p = 0; r < first + n;) {
                    while (r >= starts[p + 1])
                        ++p;
                    const std::size_t m = std::min(first + n, starts[p + 1]) - r;
                    ws_.read_rows_f32(parts[p].tensor, parts[p].view, r - starts[p], m,
                                      values.subspan((r - first) * cols, m * cols));
                    r += m;
                }
            if (!direct.empty()) {
                t_.storage.pack_into(values, n, cols, direct.subspan(first * stride, n * stride));
                continue;
            }
            const std::size_t at = staged.size();
            staged.resize(at + n * stride);
            t_.storage.pack_into(values, n, cols, std::span(staged).subspan(at, n * stride));
            if (staged.size() >= flush_bytes) flush();
        }
        flush();
    });
    release();
}

void Lowering::record_stack(const std::vector<Weight>& views, bool transpose, const Place& all) {
    std::vector<std::size_t> rows;
    for (auto& v : views) {
        auto shape = ws_.view_of(v.tensor, v.view);
        rows.push_back(transpose ? shape.row_len : shape.rows);
    }
    const std::uint64_t n = std::accumulate(rows.begin(), rows.end(), std::uint64_t{0});
    if (n == 0 || all.bytes % n != 0) return;
    const std::uint64_t stride = all.bytes / n; // each row packs alone, in its stride
    std::uint64_t row = 0;
    for (std::size_t p = 0; p < views.size(); ++p) {
        out_.image.matrices.push_back({views[p].tensor, rows_key(views[p].view), transpose,
                                       all.offset + row * stride, rows[p] * stride});
        row += rows[p];
    }
}

Place Lowering::weight(const Weight& w, Storing how, std::size_t want_rows, std::size_t want_cols) {
    auto key = std::make_tuple(w.tensor, rows_key(w.view), how);
    if (auto it = weights_.find(key); it != weights_.end()) return it->second;
    auto shape = ws_.view_of(w.tensor, w.view);
    std::size_t r = shape.rows, c = shape.row_len;
    if (how == Storing::PackedTransposed) std::swap(r, c);
    if (r * c != want_rows * want_cols || (how != Storing::RawF32 && (r != want_rows || c != want_cols)))
        throw Error(fmt::format("tensor {}: its view reads {} × {}, the op needs {} × {}", ws_.name(w.tensor),
                                r, c, want_rows, want_cols));
    bool t = how == Storing::PackedTransposed;
    const std::string what = fmt::format("{}:{}:{}:{}x{}", ws_.name(w.tensor), rows_key(w.view),
                                         how == Storing::RawF32 ? "raw"
                                         : t                    ? "packed-t"
                                                                : "packed",
                                         r, c);
    Place p = how == Storing::RawF32
                  ? reserve(4 * r * c, false, what,
                            [this, w](const Destination& out) {
                                auto values = values_of(w, false);
                                if (4 * values.size() != out.size())
                                    throw Error(fmt::format("tensor {}: {} values for {} bytes",
                                                            ws_.name(w.tensor), values.size(), out.size()));
                                out.put(0, std::as_bytes(std::span(values)));
                            })
                  : reserve(t_.storage.packed_bytes(r, c), true, what,
                            [this, w, t, r, c](const Destination& out) { pack({w}, t, r, c, out); });
    if (how != Storing::RawF32) // placed by shape: recorded even when nothing is packed
        out_.image.matrices.push_back({w.tensor, rows_key(w.view), t, p.offset, p.bytes});
    weights_.emplace(key, p);
    return p;
}

void Lowering::describe_host() {
    using program::IoRole;
    auto& h = out_.program.host;
    h.checkpoint_digest = o_.checkpoint_digest;
    h.model = o_.model;
    h.tokens = o_.bucket.tokens;
    h.seqs = o_.bucket.seqs;
    h.markers = o_.bucket.markers;
    h.max_positions = o_.max_positions;
    for (auto& op : g_.ops)
        if (auto* e = std::get_if<Embed>(&op)) h.vocab = ws_.view_of(e->table.tensor, e->table.view).rows;
    auto& m = out_.io;
    for (auto [role, place] :
         {std::pair{IoRole::Ids, &m.ids}, std::pair{IoRole::Positions, &m.positions},
          std::pair{IoRole::SeqStarts, &m.seq_starts}, std::pair{IoRole::Qtype, &m.qtype},
          std::pair{IoRole::MarkerRows, &m.marker_rows}, std::pair{IoRole::MarkerStarts, &m.marker_starts}})
        h.io.push_back(entry(role, *place));
    if (o_.slots) {
        auto e = entry(IoRole::Slots, m.slots);
        e.width = *o_.slots;
        h.io.push_back(e);
    }
    for (std::size_t k = 0; k < m.outputs.size(); ++k) {
        auto [v, place] = m.outputs[k];
        bool probe = k >= m.graph_outputs();
        auto e = entry(probe            ? IoRole::Probe
                       : v == g_.logits ? IoRole::Logits
                       : v == g_.act    ? IoRole::Act
                                        : IoRole::Next,
                       place);
        auto rows = g_.shape(v).rows;
        e.rows = rows == Rows::Tokens ? program::IoRows::Tokens
                 : rows == Rows::Seqs ? program::IoRows::Seqs
                                      : program::IoRows::Markers;
        e.value = v.id;
        e.width = width(v);
        if (probe) {
            auto& p = m.probes[k - m.graph_outputs()];
            e.after = std::uint32_t(p.after);
            if (p.layer) e.layer = std::uint32_t(*p.layer);
        }
        h.io.push_back(e);
    }
}

void Lowering::map_regions() {
    auto& p = out_.program;
    auto& cap = out_.capacity;
    std::uint64_t at = 0;
    auto region = [&](Region r, std::uint64_t size, std::uint64_t& budget) {
        p.regions.push_back({r, program::Space::Ddr, at, size});
        const std::uint64_t from = at;
        at = align_up(at + size, t_.stripe());
        budget = at - from;
    };
    region(Region::Weights, weights_end_, cap.weights);
    region(Region::Caches, caches_end_, cap.caches);
    region(Region::State, state_end_, cap.state);
    region(Region::Io, share_ ? std::max(io_end_, share_->io_bytes) : io_end_, cap.io);
    p.arena_bytes =
        share_ ? std::max<std::uint64_t>(4 * out_.layout.len, share_->arena_bytes) : 4 * out_.layout.len;
    p.config_digest = t_.config_digest;
    p.regions.push_back({Region::Arena, program::Space::Sram, 0, p.arena_bytes});
    p.regions.push_back(
        {Region::Program, program::Space::Ddr, at + (share_ ? share_->program_offset : 0), 0});
    p.regions.back().size = program::card_bytes(p); // fixed-width fields: the size does not change the size
    cap.program = share_ ? share_->programs_bytes : p.regions.back().size;
    cap.ddr_bytes = t_.ddr_bytes;
    cap.channels = t_.channels;
    cap.channel_bytes = t_.channel_bytes;
    cap.weight_format = t_.weight_format;
    cap.positions = o_.max_positions;
    cap.seqs = store_sequences();
    if (refuse_over_capacity_ && !cap.fits()) throw Refusal(cap.refusal());
}

} // namespace cardsim::lower::detail
