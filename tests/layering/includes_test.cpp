// The layering holds: every `#include "..."` of every source under engine/, models/, sim/, traces/,
// serve/ and cli/ points down the data flow (DESIGN.md: engine <- models; engine <- sim <- traces <- cli;
// sim <- serve <- cli),
// which CMake alone does not enforce (every library sees the whole tree's headers).

#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace {

namespace fs = std::filesystem;

/// A folder of the data flow and the top-level folders its sources may include.
struct Layer {
    std::string_view folder;
    std::vector<std::string_view> may_include;
};

/// The rule: engine includes only itself; models and sim each the engine (models knows nothing of
/// the card, the card nothing of checkpoints); traces the card and the engine; serve (the host's scheduler
/// above the card) the card and the engine; cli everything.
const std::array<Layer, 6> layers = {{
    {"engine", {"engine"}},
    {"models", {"models", "engine"}},
    {"sim", {"sim", "engine"}},
    {"traces", {"traces", "sim", "engine"}},
    {"serve", {"serve", "sim", "engine"}},
    {"cli", {"cli", "serve", "traces", "sim", "models", "engine"}},
}};

/// An include that points up the data flow (or out of the tree).
struct Violation {
    std::string file; ///< relative to the tree's root
    std::size_t line = 0;
    std::string include;
    std::string rule;
    std::string text() const { return fmt::format("{}:{}: includes \"{}\": {}", file, line, include, rule); }
};

/// What a scan of a tree read and found.
struct Scan {
    std::size_t files = 0, includes = 0;
    std::map<std::string, std::size_t> files_of; ///< sources read per layer folder
    std::vector<Violation> violations;
};

bool is_source(const fs::path& p) {
    auto e = p.extension();
    return e == ".hpp" || e == ".cpp" || e == ".h" || e == ".inc";
}

/// The top-level folder of the file `include` (as written in `file`, under `root`) names, as the
/// preprocessor finds it: beside the including file first, then from the root (the include path).
/// None when it resolves outside the tree.
std::optional<std::string> top_folder(const fs::path& root, const fs::path& file,
                                      const std::string& include) {
    auto beside = (file.parent_path() / include).lexically_normal();
    auto found = fs::exists(beside) ? beside : (root / include).lexically_normal();
    auto rel = found.lexically_relative(root);
    if (rel.empty() || *rel.begin() == "..") return std::nullopt;
    return rel.begin()->string();
}

/// Every `#include "..."` of every source under the layers' folders of `root`, checked.
Scan scan(const fs::path& root) {
    static const std::regex include_line(R"(^\s*#\s*include\s*"([^"]+)\")");
    Scan s;
    for (auto& layer : layers) {
        auto dir = root / layer.folder;
        if (!fs::exists(dir)) continue;
        for (auto& entry : fs::recursive_directory_iterator(dir)) {
            if (!entry.is_regular_file() || !is_source(entry.path())) continue;
            ++s.files;
            ++s.files_of[std::string(layer.folder)];
            std::ifstream in(entry.path());
            std::string text;
            for (std::size_t n = 1; std::getline(in, text); ++n) {
                std::smatch m;
                if (!std::regex_search(text, m, include_line)) continue;
                ++s.includes;
                auto include = m[1].str();
                auto top = top_folder(root, entry.path(), include);
                bool allowed = top && std::find(layer.may_include.begin(), layer.may_include.end(), *top) !=
                                          layer.may_include.end();
                if (allowed) continue;
                std::string may;
                for (auto f : layer.may_include)
                    may += fmt::format("{}{}/", may.empty() ? "" : ", ", f);
                s.violations.push_back(
                    {entry.path().lexically_relative(root).string(), n, include,
                     top ? fmt::format("{}/ may include only {} (not {}/)", layer.folder, may, *top)
                         : "it resolves outside the tree"});
            }
        }
    }
    std::sort(s.violations.begin(), s.violations.end(),
              [](auto& a, auto& b) { return std::tie(a.file, a.line) < std::tie(b.file, b.line); });
    return s;
}

/// Writes `text` to `root/file`, creating its folders.
void put(const fs::path& root, const std::string& file, const std::string& text) {
    fs::create_directories((root / file).parent_path());
    std::ofstream(root / file) << text;
}

} // namespace

TEST_CASE("every include in engine, models, sim, traces, serve and cli points down the data flow") {
    auto s = scan(CARDSIM_SOURCE_DIR);
    // The scan read the tree (a wrong root would find nothing and pass): every layer's sources.
    for (auto& layer : layers)
        REQUIRE(s.files_of[std::string(layer.folder)] >= 8);
    REQUIRE(s.includes > 400);
    std::string found;
    for (auto& v : s.violations)
        found += v.text() + "\n";
    INFO(found);
    REQUIRE(s.violations.empty());
}

TEST_CASE("an include up the data flow is reported with its file, line and the rule it breaks") {
    cardsim::test::ScratchDir d("layering");
    auto root = d.path();
    put(root, "engine/graph/a.hpp", "#pragma once\n// an engine header\n#include \"sim/card/card.hpp\"\n");
    put(root, "engine/graph/b.cpp", "#include \"engine/graph/a.hpp\"\n  #  include \"models/model.hpp\"\n");
    put(root, "models/local.hpp", "#pragma once\n");
    put(root, "models/m.cpp", "#include \"local.hpp\"\n#include \"engine/graph/a.hpp\"\n#include <vector>\n");
    put(root, "sim/card/c.cpp", "#include \"engine/graph/a.hpp\"\n#include \"models/local.hpp\"\n");
    put(root, "traces/t.cpp",
        "#include \"sim/card/c.hpp\"\n#include \"cli/pipeline.hpp\"\n#include \"../x.hpp\"\n");
    put(root, "cli/main.cpp", "#include \"traces/t.hpp\"\n#include \"models/local.hpp\"\n");
    auto s = scan(root);
    REQUIRE(s.files == 7);
    REQUIRE(s.includes == 12);
    std::vector<std::string> got;
    for (auto& v : s.violations)
        got.push_back(v.text());
    REQUIRE(got == std::vector<std::string>{
                       "engine/graph/a.hpp:3: includes \"sim/card/card.hpp\": engine/ may include only "
                       "engine/ (not sim/)",
                       "engine/graph/b.cpp:2: includes \"models/model.hpp\": engine/ may include only "
                       "engine/ (not models/)",
                       "sim/card/c.cpp:2: includes \"models/local.hpp\": sim/ may include only sim/, "
                       "engine/ (not models/)",
                       "traces/t.cpp:2: includes \"cli/pipeline.hpp\": traces/ may include only traces/, "
                       "sim/, engine/ (not cli/)",
                       "traces/t.cpp:3: includes \"../x.hpp\": it resolves outside the tree",
                   });
}
