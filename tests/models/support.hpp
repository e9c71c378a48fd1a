#pragma once
// Helpers shared by the models tests: scratch directories and synthetic checkpoints.

#include "models/synthetic.hpp"

#include <filesystem>
#include <string>

namespace cardsim::models::test {

/// A fresh, empty directory under the system temp dir, removed when the object dies.
class ScratchDir {
public:
    explicit ScratchDir(const std::string& tag);
    ~ScratchDir();
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    const std::filesystem::path& path() const { return path_; }
    std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

private:
    std::filesystem::path path_;
};

/// Writes a tiny synthetic checkpoint of `arch` into `dir` (seed `seed`, f32 unless told).
SynthResult tiny(SynthArch arch, const std::filesystem::path& dir, std::uint64_t seed = 1,
                 Dtype dtype = Dtype::F32, unsigned shards = 1);

/// Writes `text` to `path`.
void write_file(const std::filesystem::path& path, const std::string& text);

/// The bytes of the file at `path`.
std::string read_file(const std::filesystem::path& path);

/// The largest |a − b| over the elements, divided by the largest |b| (the relative error of a row of
/// logits against its reference).
double relative_error(std::span<const double> a, std::span<const double> b);

} // namespace cardsim::models::test
