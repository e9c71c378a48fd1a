#pragma once
// Helpers shared by the models tests: synthetic checkpoints, files, the relative error of a row, and
// the scratch directory every test writes in.

#include "models/synthetic.hpp"
#include "tests/support/scratch_dir.hpp"

#include <filesystem>
#include <string>

namespace cardsim::models::test {

/// The models tests write their files in a ScratchDir.
using cardsim::test::ScratchDir;

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
