#pragma once
// What the tests of the command line share: generated checkpoints, `--machine` output as a map,
// and a file's bytes.

#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace cardsim::test {

/// Generates a tiny checkpoint of `arch` (make-model's --arch) with `seed` in `dir`, in a folder
/// named after them, and returns its path; the test fails if make-model does.
inline std::string make_model(const ScratchDir& dir, const std::string& arch, int seed = 2,
                              const std::string& size = "tiny") {
    auto m = (dir / (arch + "-" + size + "-" + std::to_string(seed))).string();
    REQUIRE(run_cardsim("make-model --arch " + arch + " --size " + size + " --seed " + std::to_string(seed) +
                        " -o " + m)
                .code == 0);
    return m;
}

/// The `key=value` lines of a `--machine` output as a map (lines without `=` ignored).
inline std::map<std::string, std::string> machine_values(const std::string& out) {
    std::map<std::string, std::string> kv;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);)
        if (auto eq = line.find('='); eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
    return kv;
}

/// The whole content of the file at `path` (empty when it cannot be read).
inline std::string slurp(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

} // namespace cardsim::test
