#include "models/checkpoint.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include "engine/error.hpp"
#include "models/json.hpp"
#include "models/view_text.hpp"

#include <boost/json.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <set>

namespace cardsim::models {

Checkpoint Checkpoint::open_config(const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    Checkpoint c;
    c.dir_ = dir;
    c.shapes_only_ = true;
    if (!fs::is_directory(dir))
        throw Error(fmt::format("{}: not a directory (expected a checkpoint directory with config.json)",
                                dir.string()));
    c.config_path_ = (dir / CONFIG_FILE).string();
    if (!fs::exists(c.config_path_))
        throw Error(fmt::format("{}: the checkpoint has no config.json", dir.string()));
    auto cfg = read_json_file(c.config_path_);
    if (!cfg.is_object())
        throw Error(fmt::format("{}: the configuration is not a JSON object", c.config_path_));
    c.config_ = std::move(cfg.as_object());
    return c;
}

bool Checkpoint::has_weights(const std::filesystem::path& dir) {
    return std::filesystem::exists(dir / SINGLE_FILE) || std::filesystem::exists(dir / INDEX_FILE);
}

void Checkpoint::declare(std::vector<TensorInfo> tensors) {
    if (!shapes_only_)
        throw Error(
            fmt::format("{}: a checkpoint with weights takes its tensors from its files", dir_.string()));
    declared_ = std::move(tensors);
    entries_.clear();
    for (std::size_t i = 0; i < declared_.size(); ++i)
        entries_.push_back(Entry{npos, i});
    std::sort(entries_.begin(), entries_.end(),
              [&](auto& a, auto& b) { return entry_name(a) < entry_name(b); });
    for (std::size_t i = 1; i < entries_.size(); ++i)
        if (entry_name(entries_[i]) == entry_name(entries_[i - 1]))
            throw Error(fmt::format("{}: tensor `{}` declared twice", config_path_, entry_name(entries_[i])));
}

Checkpoint Checkpoint::open(const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    Checkpoint c;
    c.dir_ = dir;
    if (!fs::is_directory(dir))
        throw Error(fmt::format("{}: not a directory (expected a checkpoint directory with config.json and "
                                "safetensors files)",
                                dir.string()));
    c.config_path_ = (dir / CONFIG_FILE).string();
    if (!fs::exists(c.config_path_))
        throw Error(fmt::format("{}: the checkpoint has no config.json", dir.string()));
    auto cfg = read_json_file(c.config_path_);
    if (!cfg.is_object())
        throw Error(fmt::format("{}: the configuration is not a JSON object", c.config_path_));
    c.config_ = std::move(cfg.as_object());

    const fs::path single = dir / SINGLE_FILE;
    const fs::path index = dir / INDEX_FILE;
    const bool has_single = fs::exists(single), has_index = fs::exists(index);
    if (has_single && has_index)
        throw Error(fmt::format("{}: holds both {} and {}: it is unclear which is the checkpoint",
                                dir.string(), SINGLE_FILE, INDEX_FILE));
    if (!has_single && !has_index)
        throw Error(fmt::format("{}: holds neither {} nor {}", dir.string(), SINGLE_FILE, INDEX_FILE));

    if (has_single) {
        c.files_.push_back(SafetensorsFile::open(single));
    } else {
        const std::string where = index.string();
        auto v = read_json_file(where);
        const auto* map = v.is_object() ? v.as_object().if_contains("weight_map") : nullptr;
        if (!map || !map->is_object())
            throw Error(fmt::format("{}: has no `weight_map` object (tensor name → shard file)", where));
        std::map<std::string, std::string> listed; // tensor → file
        std::map<std::string, std::size_t> shard;  // file → index in files_
        for (const auto& kv : map->as_object()) {
            const std::string tensor(kv.key());
            if (!kv.value().is_string())
                throw Error(
                    fmt::format("{}: tensor `{}`: its shard is not a file name string", where, tensor));
            const std::string file(kv.value().as_string());
            const fs::path rel(file);
            if (file.empty() || rel.is_absolute() || rel.has_parent_path())
                throw Error(
                    fmt::format("{}: tensor `{}`: shard `{}` is not a file name inside the checkpoint", where,
                                tensor, file));
            listed.emplace(tensor, file);
            if (!shard.count(file)) {
                shard.emplace(file, c.files_.size());
                if (!fs::exists(dir / rel))
                    throw Error(
                        fmt::format("{}: tensor `{}`: its shard `{}` does not exist", where, tensor, file));
                c.files_.push_back(SafetensorsFile::open(dir / rel));
            }
        }
        for (const auto& [tensor, file] : listed)
            if (!c.files_[shard.at(file)].find(tensor))
                throw Error(fmt::format("{}: tensor `{}`: the index puts it in `{}`, which does not hold it",
                                        where, tensor, file));
        for (const auto& [file, i] : shard)
            for (const auto& t : c.files_[i].tensors()) {
                auto it = listed.find(t.name);
                if (it == listed.end())
                    throw Error(
                        fmt::format("{}: tensor `{}`: shard `{}` holds it but the index does not list it",
                                    where, t.name, file));
                if (it->second != file)
                    throw Error(
                        fmt::format("{}: tensor `{}`: shard `{}` holds it but the index puts it in `{}` "
                                    "(a name in two shards)",
                                    where, t.name, file, it->second));
            }
    }
    for (std::size_t f = 0; f < c.files_.size(); ++f)
        for (const auto& t : c.files_[f].tensors())
            c.entries_.push_back(Entry{f, static_cast<std::size_t>(&t - c.files_[f].tensors().data())});
    std::sort(c.entries_.begin(), c.entries_.end(),
              [&](auto& a, auto& b) { return c.entry_name(a) < c.entry_name(b); });
    return c;
}

std::vector<std::string> Checkpoint::files() const {
    std::vector<std::string> out;
    for (auto& f : files_)
        out.push_back(f.path());
    return out;
}

std::optional<graph::W> Checkpoint::find(std::string_view name) const {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                               [&](const Entry& e, std::string_view n) { return entry_name(e) < n; });
    if (it == entries_.end() || entry_name(*it) != name) return std::nullopt;
    return static_cast<graph::W>(it - entries_.begin());
}

graph::W Checkpoint::require(std::string_view name) const {
    if (auto w = find(name)) return *w;
    throw Error(fmt::format("{}: the checkpoint has no tensor `{}`", dir_.string(), name));
}

const TensorInfo& Checkpoint::info(graph::W w) const {
    if (w >= entries_.size())
        throw Error(fmt::format("{}: weight {} does not exist: the checkpoint has {} tensors", dir_.string(),
                                w, entries_.size()));
    return tensor_of(entries_[w]);
}

const std::string& Checkpoint::file_of(graph::W w) const {
    const Entry& e = entries_.at(w);
    return e.file == npos ? config_path_ : files_[e.file].path();
}

std::span<const std::byte> Checkpoint::bytes(graph::W w) const {
    const Entry& e = entries_.at(w);
    if (e.file == npos)
        throw Error(fmt::format("{}: tensor `{}` has no weights: the checkpoint is shapes-only (config.json "
                                "alone, or --shapes-only), which times a run but cannot compute one",
                                dir_.string(), info(w).name));
    return files_[e.file].bytes(info(w));
}

void Checkpoint::release(graph::W w) const {
    if (entries_.at(w).file == npos) return;
    auto b = bytes(w);
    if (b.empty()) return;
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    auto begin = reinterpret_cast<std::uintptr_t>(b.data()) / page * page;
    auto end = reinterpret_cast<std::uintptr_t>(b.data() + b.size());
    ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED); // advice only: failure is harmless
}

std::size_t Checkpoint::parameter_count() const {
    std::size_t n = 0;
    for (graph::W w = 0; w < entries_.size(); ++w)
        n += info(w).numel();
    return n;
}

graph::ViewShape Checkpoint::checked_view(graph::W w, const graph::View& view) const {
    auto s = graph::view_shape(info(w).shape, view);
    if (auto* why = std::get_if<std::string>(&s))
        throw Error(fmt::format("{}: tensor `{}` [{}]: the view `{}` does not fit it: {}", file_of(w),
                                name(w), fmt::join(shape(w), ", "), describe(view), *why));
    return std::get<graph::ViewShape>(s);
}

namespace {

/// Converts `n` elements of dtype `d` stored at `src` into `out`.
template <class T>
void convert(Dtype d, const std::byte* src, std::size_t n, T* out) {
    switch (d) {
    case Dtype::BF16:
        for (std::size_t j = 0; j < n; ++j) { // the bf16's bits are the high half of its f32 (exact)
            std::uint16_t b;
            std::memcpy(&b, src + 2 * j, 2);
            out[j] = static_cast<T>(std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16));
        }
        return;
    case Dtype::F32:
        for (std::size_t j = 0; j < n; ++j) {
            float f;
            std::memcpy(&f, src + 4 * j, 4);
            out[j] = static_cast<T>(f);
        }
        return;
    default: {
        const std::size_t es = size_of(d);
        for (std::size_t j = 0; j < n; ++j)
            out[j] = static_cast<T>(to_double(d, src + j * es));
    }
    }
}

} // namespace

template <class Row>
void Checkpoint::read(graph::W w, const graph::View& view, std::size_t out_size, Row row, std::size_t first,
                      std::size_t count) const {
    const graph::ViewShape vs = checked_view(w, view);
    if (count == npos) count = vs.rows - std::min(first, vs.rows);
    if (first > vs.rows || count > vs.rows - first)
        throw Error(fmt::format("tensor `{}`: reading rows {} .. {} of view `{}`, which has {}", name(w),
                                first, first + count, describe(view), vs.rows));
    if (out_size != count * vs.row_len)
        throw Error(fmt::format("tensor `{}`: reading view `{}` needs room for {} elements, not {}", name(w),
                                describe(view), count * vs.row_len, out_size));
    const Entry& e = entries_.at(w);
    if (e.file == npos) (void)bytes(w); // a shapes-only tensor: says so
    const SafetensorsFile& file = files_[e.file];
    const TensorInfo& t = info(w);
    // The rows are read from the file (pread) into a buffer of this thread's, a run of consecutive
    // stored rows at a time: each tensor read once costs no page faults, which on a virtual machine
    // cost more than the copy. A column range reads part of each stored row, which is as long as
    // the whole view's rows; strided columns are gathered first.
    const auto* columns = std::get_if<graph::ColumnRange>(&view);
    const std::size_t es = size_of(dtype(w));
    const std::size_t row_bytes = (columns ? checked_view(w, graph::Whole{}).row_len : vs.row_len) * es;
    const std::size_t skip = columns ? columns->first * es : 0;
    auto stored_of = [&](std::size_t r) { // the stored row that view row `r` reads
        if (auto* rr = std::get_if<graph::RowRange>(&view)) return rr->first + r;
        if (auto* hp = std::get_if<graph::HeadPart>(&view))
            return (hp->first_head + r / hp->width) * hp->stride + hp->offset + r % hp->width;
        if (columns) return columns->first_row + r;
        return r;
    };
    thread_local std::vector<std::byte> buffer;
    const std::size_t end = first + count;
    if (vs.row_len == 0) {
        for (std::size_t r = first; r < end; ++r)
            row(r - first, buffer.data(), 0);
        return;
    }
    if (columns) {
        const std::size_t span = ((vs.row_len - 1) * columns->stride + 1) * es;
        std::vector<std::byte> gathered(columns->stride > 1 ? vs.row_len * es : 0);
        if (buffer.size() < span) buffer.resize(span);
        for (std::size_t r = first; r < end; ++r) {
            file.read(t, stored_of(r) * row_bytes + skip, std::span(buffer.data(), span));
            const std::byte* src = buffer.data();
            if (!gathered.empty()) {
                for (std::size_t j = 0; j < vs.row_len; ++j)
                    std::memcpy(gathered.data() + j * es, src + j * columns->stride * es, es);
                src = gathered.data();
            }
            row(r - first, src, vs.row_len);
        }
        return;
    }
    constexpr std::size_t piece = std::size_t{256} << 10; // a run's bytes: stays in the core's cache
    const std::size_t most = std::max<std::size_t>(1, piece / row_bytes);
    for (std::size_t r = first; r < end;) {
        const std::size_t s0 = stored_of(r);
        std::size_t n = 1;
        while (r + n < end && n < most && stored_of(r + n) == s0 + n)
            ++n;
        if (buffer.size() < n * row_bytes) buffer.resize(n * row_bytes);
        file.read(t, s0 * row_bytes, std::span(buffer.data(), n * row_bytes));
        for (std::size_t k = 0; k < n; ++k)
            row(r + k - first, buffer.data() + k * row_bytes, vs.row_len);
        r += n;
    }
}

void Checkpoint::read_f32(graph::W w, const graph::View& view, std::span<float> out) const {
    const Dtype d = dtype(w);
    read(w, view, out.size(),
         [&](std::size_t r, const std::byte* src, std::size_t n) { convert(d, src, n, out.data() + r * n); });
}

void Checkpoint::read_rows_f32(graph::W w, const graph::View& view, std::size_t first, std::size_t count,
                               std::span<float> out) const {
    const Dtype d = dtype(w);
    read(
        w, view, out.size(),
        [&](std::size_t r, const std::byte* src, std::size_t n) { convert(d, src, n, out.data() + r * n); },
        first, count);
}

std::vector<double> Checkpoint::values(graph::W w, const graph::View& view) const {
    std::vector<double> out(checked_view(w, view).numel());
    read_f64(w, view, out);
    return out;
}

void Checkpoint::read_f64(graph::W w, const graph::View& view, std::span<double> out) const {
    const Dtype d = dtype(w);
    read(w, view, out.size(),
         [&](std::size_t r, const std::byte* src, std::size_t n) { convert(d, src, n, out.data() + r * n); });
}

} // namespace cardsim::models
