#pragma once
// Writing safetensors files: plan the header and offsets, then fill each tensor's bytes (in
// parallel, in chunks) into a temporary file that is renamed into place when complete.

#include "models/dtype.hpp"

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace cardsim::models {

/// One tensor to write: its name, dtype and shape.
struct TensorToWrite {
    std::string name;
    Dtype dtype = Dtype::F32;
    std::vector<std::size_t> shape;
};

/// Where each tensor goes in a file: the header text (padded with spaces to a multiple of 8, as the
/// reference writer does) and each tensor's data offsets, in the order given.
class SafetensorsPlan {
public:
    /// Plans `tensors` (laid out in this order) with `metadata` as `__metadata__` (omitted if empty).
    explicit SafetensorsPlan(std::vector<TensorToWrite> tensors,
                             std::map<std::string, std::string> metadata = {});

    std::span<const TensorToWrite> tensors() const { return tensors_; }
    /// The data offsets [begin, end) of tensor `i`, relative to the data's start.
    std::pair<std::size_t, std::size_t> offsets(std::size_t i) const { return offsets_[i]; }
    /// The header JSON, padded.
    const std::string& header() const { return header_; }
    /// 8 + header length.
    std::size_t data_start() const { return 8 + header_.size(); }
    /// The whole file's size.
    std::size_t file_size() const;

private:
    std::vector<TensorToWrite> tensors_;
    std::vector<std::pair<std::size_t, std::size_t>> offsets_;
    std::string header_;
};

/// Produces elements `first .. first + count` of tensor `tensor` into `out` (count × dtype size
/// bytes, little-endian). Called from several threads at once for different chunks.
using FillTensor =
    std::function<void(std::size_t tensor, std::size_t first, std::size_t count, std::span<std::byte> out)>;

/// Writes the file of `plan` at `path`: a temporary beside it, filled by `fill` over `threads`
/// workers in chunks of at most a million elements, then renamed onto `path`. Throws cardsim::Error
/// naming the path on any I/O failure, leaving no partial file behind.
void write_safetensors(const std::filesystem::path& path, const SafetensorsPlan& plan, const FillTensor& fill,
                       unsigned threads = 1);

/// Writes `values` (row-major, as f64) as tensors of the given dtypes: a convenience for small
/// files (tests). Each value is rounded to its dtype (nearest, ties to even for F32/F16/BF16).
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::vector<std::vector<double>>& values,
                       const std::map<std::string, std::string>& metadata = {});

/// Stores `x` as one element of `d` at `out` (F32, F64, F16, BF16, and the integer types by
/// rounding to nearest and saturating).
void store_element(Dtype d, double x, std::byte* out);

} // namespace cardsim::models
