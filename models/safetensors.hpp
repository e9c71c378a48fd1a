#pragma once
// One safetensors file, read through a memory map and validated in full before any use.
//
// Layout (huggingface/safetensors): an 8-byte little-endian header length N, N bytes of UTF-8 JSON
// `{"name": {"dtype", "shape", "data_offsets": [begin, end)}, "__metadata__": {str: str}}`, then the
// data. Offsets are relative to the data's start; together the tensors cover the data exactly, from
// byte 0 to the end of the file, without holes or overlaps.

#include "models/dtype.hpp"

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace boost::iostreams {
class mapped_file_source;
}

namespace cardsim::models {

/// The largest header a file may declare (the safetensors reference's limit).
inline constexpr std::uint64_t MAX_HEADER_BYTES = 100'000'000;

/// One tensor entry of a safetensors header.
struct TensorInfo {
    std::string name;
    Dtype dtype = Dtype::F32;
    std::vector<std::size_t> shape;
    std::size_t begin = 0; ///< first byte, relative to the data's start
    std::size_t end = 0;   ///< one past the last byte
    /// The element count: the product of the shape (1 for a scalar).
    std::size_t numel() const;
};

/// A parsed and validated header: the tensors sorted by name, the metadata, where the data starts.
struct SafetensorsHeader {
    std::vector<TensorInfo> tensors;
    std::map<std::string, std::string> metadata;
    std::size_t data_start = 0; ///< 8 + N
};

/// Parses and validates the safetensors image `file` (the whole file's bytes); `where` names the
/// file in errors. Every rule of the format is checked: header length within the file and the
/// limit, valid JSON without duplicate keys, known dtypes, shapes of non-negative integers,
/// `end - begin = numel × dtype size`, offsets inside the data, no overlap, no hole, no trailing
/// bytes. Throws cardsim::Error naming the file and the tensor.
SafetensorsHeader parse_safetensors(std::span<const std::byte> file, std::string_view where);

/// A safetensors file mapped read-only into memory. Cheap to copy (the map is shared).
class SafetensorsFile {
public:
    /// Maps and validates the file at `path` (see `parse_safetensors`).
    static SafetensorsFile open(const std::filesystem::path& path);

    /// The file's path, as given.
    const std::string& path() const { return path_; }
    /// The tensors, sorted by name.
    std::span<const TensorInfo> tensors() const { return header_.tensors; }
    /// The tensor called `name`, or null.
    const TensorInfo* find(std::string_view name) const;
    /// The `__metadata__` map (empty when absent).
    const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
    /// The stored bytes of `t`, one of this file's tensors.
    std::span<const std::byte> bytes(const TensorInfo& t) const;
    /// Copies `out.size()` stored bytes of `t` from byte `offset` of its data (inside it) into `out`
    /// with one read of the file: the mapping's pages are never touched, so reading a tensor once
    /// costs no page faults (a cardsim::Error naming the file if the read fails).
    void read(const TensorInfo& t, std::size_t offset, std::span<std::byte> out) const;

private:
    std::string path_;
    std::shared_ptr<boost::iostreams::mapped_file_source> map_;
    /// The file open for `read`, closed with its last copy.
    struct Descriptor {
        int fd = -1;
        explicit Descriptor(int f) : fd(f) {}
        ~Descriptor();
        Descriptor(const Descriptor&) = delete;
        Descriptor& operator=(const Descriptor&) = delete;
    };
    std::shared_ptr<const Descriptor> file_;
    SafetensorsHeader header_;
};

} // namespace cardsim::models
