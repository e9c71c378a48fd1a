#include "models/safetensors.hpp"

#include "engine/error.hpp"
#include "engine/io/positional.hpp"
#include "models/json.hpp"

#include <boost/iostreams/device/mapped_file.hpp>
#include <boost/json.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <unistd.h>

namespace cardsim::models {
namespace {

namespace json = boost::json;

/// A non-negative integer of a JSON value, or nothing.
std::optional<std::uint64_t> unsigned_of(const json::value& v) {
    if (v.is_uint64()) return v.as_uint64();
    if (v.is_int64() && v.as_int64() >= 0) return static_cast<std::uint64_t>(v.as_int64());
    return std::nullopt;
}

/// `a × b`, or nothing on overflow of size_t.
std::optional<std::size_t> mul(std::size_t a, std::size_t b) {
    if (a != 0 && b > std::numeric_limits<std::size_t>::max() / a) return std::nullopt;
    return a * b;
}

/// Reads one tensor entry `name: v` of the header of `where`.
TensorInfo parse_entry(std::string_view where, const std::string& name, const json::value& v) {
    auto bad = [&](std::string_view what) {
        return Error(fmt::format("{}: tensor `{}`: {}", where, name, what));
    };
    if (!v.is_object()) throw bad("its header entry is not an object {dtype, shape, data_offsets}");
    const auto& o = v.as_object();
    TensorInfo t;
    t.name = name;
    const auto* dt = o.if_contains("dtype");
    if (!dt || !dt->is_string()) throw bad("has no `dtype` string");
    const std::string_view ds(dt->as_string().data(), dt->as_string().size());
    auto d = parse_dtype(ds);
    if (!d)
        throw bad(
            fmt::format("has unknown dtype `{}` (expected one of BOOL, U8, I8, I16, U16, F16, BF16, I32, "
                        "U32, F32, F64, I64, U64, F8_E4M3, F8_E5M2, F8_E8M0)",
                        ds));
    t.dtype = *d;
    const auto* sh = o.if_contains("shape");
    if (!sh || !sh->is_array()) throw bad("has no `shape` array");
    std::size_t numel = 1;
    for (const auto& e : sh->as_array()) {
        auto n = unsigned_of(e);
        if (!n) throw bad("has a shape entry that is not a non-negative integer");
        t.shape.push_back(static_cast<std::size_t>(*n));
        auto m = mul(numel, t.shape.back());
        if (!m) throw bad("has a shape whose element count overflows");
        numel = *m;
    }
    const auto* off = o.if_contains("data_offsets");
    if (!off || !off->is_array() || off->as_array().size() != 2)
        throw bad("has no `data_offsets` pair [begin, end]");
    auto b = unsigned_of(off->as_array()[0]);
    auto e = unsigned_of(off->as_array()[1]);
    if (!b || !e) throw bad("has data_offsets that are not non-negative integers");
    if (*b > *e) throw bad(fmt::format("has data_offsets [{}, {}) that end before they begin", *b, *e));
    t.begin = static_cast<std::size_t>(*b);
    t.end = static_cast<std::size_t>(*e);
    auto bytes = mul(numel, size_of(t.dtype));
    if (!bytes || *bytes != t.end - t.begin)
        throw bad(fmt::format("holds {} bytes [{}, {}) but its shape [{}] of {} needs {}", t.end - t.begin,
                              t.begin, t.end, fmt::join(t.shape, ", "), models::name(t.dtype),
                              bytes ? fmt::format("{}", *bytes) : std::string("more than fit in memory")));
    return t;
}

} // namespace

std::size_t TensorInfo::numel() const {
    std::size_t n = 1;
    for (auto d : shape)
        n *= d;
    return n;
}

SafetensorsHeader parse_safetensors(std::span<const std::byte> file, std::string_view where) {
    if (file.size() < 8)
        throw Error(
            fmt::format("{}: truncated: {} bytes, but a safetensors file starts with an 8-byte header "
                        "length",
                        where, file.size()));
    std::uint64_t n = 0;
    std::memcpy(&n, file.data(), 8);
    if (n > MAX_HEADER_BYTES)
        throw Error(
            fmt::format("{}: header length {} exceeds the limit of {} bytes (not a safetensors file?)", where,
                        n, MAX_HEADER_BYTES));
    if (n < 2) throw Error(fmt::format("{}: header length {} is too short for a JSON object", where, n));
    if (n > file.size() - 8)
        throw Error(fmt::format("{}: truncated: the header length says {} bytes but only {} follow it", where,
                                n, file.size() - 8));
    const std::string_view text(reinterpret_cast<const char*>(file.data()) + 8, static_cast<std::size_t>(n));
    const std::string header_where = fmt::format("{} (header)", where);
    json::value v = parse_json(text, header_where);
    if (!v.is_object()) throw Error(fmt::format("{}: the header is not a JSON object", where));

    SafetensorsHeader h;
    h.data_start = 8 + static_cast<std::size_t>(n);
    for (const auto& kv : v.as_object()) {
        const std::string key(kv.key().data(), kv.key().size());
        if (key == "__metadata__") {
            if (!kv.value().is_object())
                throw Error(fmt::format("{}: `__metadata__` is not an object of strings", where));
            for (const auto& m : kv.value().as_object()) {
                if (!m.value().is_string())
                    throw Error(fmt::format("{}: `__metadata__` entry `{}` is not a string", where,
                                            std::string_view(m.key().data(), m.key().size())));
                h.metadata.emplace(std::string(m.key()), std::string(m.value().as_string()));
            }
            continue;
        }
        h.tensors.push_back(parse_entry(where, key, kv.value()));
    }

    // The data: tensors in offset order must tile [0, data size) exactly.
    const std::size_t data_size = file.size() - h.data_start;
    std::vector<const TensorInfo*> by_offset;
    for (const auto& t : h.tensors)
        by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) {
        return std::tie(a->begin, a->end, a->name) < std::tie(b->begin, b->end, b->name);
    });
    std::size_t at = 0;
    const TensorInfo* previous = nullptr;
    for (const auto* t : by_offset) {
        if (t->end > data_size)
            throw Error(
                fmt::format("{}: tensor `{}`: data_offsets [{}, {}) run past the end of the data ({} bytes "
                            "after the header): the file is truncated or the offsets are wrong",
                            where, t->name, t->begin, t->end, data_size));
        if (t->begin < at)
            throw Error(fmt::format("{}: tensor `{}`: data_offsets [{}, {}) overlap tensor `{}` [{}, {})",
                                    where, t->name, t->begin, t->end, previous->name, previous->begin,
                                    previous->end));
        if (t->begin > at)
            throw Error(
                fmt::format("{}: tensor `{}`: data_offsets [{}, {}) leave a hole of {} bytes after {}", where,
                            t->name, t->begin, t->end, t->begin - at,
                            previous ? fmt::format("tensor `{}`", previous->name)
                                     : std::string("the start of the data")));
        at = t->end;
        previous = t;
    }
    if (at != data_size)
        throw Error(
            fmt::format("{}: {} bytes follow the last tensor's data (the tensors cover {} of {} data bytes)",
                        where, data_size - at, at, data_size));
    std::sort(h.tensors.begin(), h.tensors.end(), [](auto& a, auto& b) { return a.name < b.name; });
    return h;
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
    SafetensorsFile f;
    f.path_ = path.string();
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) throw Error(fmt::format("{}: cannot open the safetensors file: {}", f.path_, ec.message()));
    if (size < 8)
        throw Error(
            fmt::format("{}: truncated: {} bytes, but a safetensors file starts with an 8-byte header "
                        "length",
                        f.path_, size));
    try {
        f.map_ = std::make_shared<boost::iostreams::mapped_file_source>(f.path_);
    } catch (const std::exception& e) {
        throw Error(fmt::format("{}: cannot map the safetensors file: {}", f.path_, e.what()));
    }
    if (!f.map_->is_open()) throw Error(fmt::format("{}: cannot map the safetensors file", f.path_));
    const auto* data = reinterpret_cast<const std::byte*>(f.map_->data());
    f.header_ = parse_safetensors(std::span(data, f.map_->size()), f.path_);
    const int fd = ::open(f.path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw Error(fmt::format("{}: cannot open the safetensors file: {}", f.path_, std::strerror(errno)));
    f.file_ = std::make_shared<const Descriptor>(fd);
    return f;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
    auto it = std::lower_bound(header_.tensors.begin(), header_.tensors.end(), name,
                               [](const TensorInfo& t, std::string_view n) { return t.name < n; });
    return it != header_.tensors.end() && it->name == name ? &*it : nullptr;
}

std::span<const std::byte> SafetensorsFile::bytes(const TensorInfo& t) const {
    const auto* data = reinterpret_cast<const std::byte*>(map_->data()) + header_.data_start;
    return std::span(data + t.begin, t.end - t.begin);
}

SafetensorsFile::Descriptor::~Descriptor() {
    ::close(fd);
}

void SafetensorsFile::read(const TensorInfo& t, std::size_t offset, std::span<std::byte> out) const {
    if (offset > t.end - t.begin || out.size() > t.end - t.begin - offset)
        throw Error(fmt::format("{}: tensor `{}`: reading {} bytes from byte {} of its {}", path_, t.name,
                                out.size(), offset, t.end - t.begin));
    const auto n = io::read_at(file_->fd, header_.data_start + t.begin + offset, out);
    if (n != static_cast<std::int64_t>(out.size()))
        throw Error(fmt::format("{}: tensor `{}`: cannot read it: {}", path_, t.name,
                                n < 0 ? std::strerror(errno) : "the file ends early (did it change?)"));
}

} // namespace cardsim::models
