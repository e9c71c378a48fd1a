#pragma once
// What the sweep tests share: the scratch directory (tests/support/scratch_dir.hpp), spec files, a CSV reader
// of their own (not the one under test), and running shell commands.

#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace cardsim::test::sweep {

/// Writes `text` to `file`.
inline void write(const std::filesystem::path& file, const std::string& text) {
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << text;
}

/// The content of `file` ("" if missing).
inline std::string read(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/// The lines of `text` (without their line breaks).
inline std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        out.push_back(l);
    return out;
}

/// A CSV file as records of cells (RFC 4180 quoting); the first record is the header.
inline std::vector<std::vector<std::string>> csv(const std::string& text) {
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> row(1);
    bool quoted = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
                row.back() += '"', ++i;
            else if (c == '"')
                quoted = false;
            else
                row.back() += c;
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            row.emplace_back();
        } else if (c == '\n') {
            rows.push_back(row);
            row.assign(1, "");
        } else {
            row.back() += c;
        }
    }
    return rows;
}

/// The index of `name` in a header; fails the test if it is missing.
inline std::size_t column(const std::vector<std::string>& header, const std::string& name) {
    auto it = std::find(header.begin(), header.end(), name);
    INFO("column " << name);
    REQUIRE(it != header.end());
    return std::size_t(it - header.begin());
}

/// Runs shell text (stdout and stderr together).
inline Ran shell(const std::string& cmd) {
    Ran r;
    std::FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
    REQUIRE(p);
    std::array<char, 4096> buf{};
    while (auto n = std::fread(buf.data(), 1, buf.size(), p))
        r.out.append(buf.data(), n);
    int status = ::pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

/// The processes whose command line mentions `text` (scanned from /proc).
inline std::vector<std::string> processes_naming(const std::string& text) {
    std::vector<std::string> found;
    for (auto& e : std::filesystem::directory_iterator("/proc")) {
        const auto name = e.path().filename().string();
        if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
        std::ifstream in(e.path() / "cmdline", std::ios::binary);
        std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
        if (cmdline.find(text) != std::string::npos) found.push_back(name + ": " + cmdline);
    }
    return found;
}

/// A spec head generating a tiny hybrid model (seed 1), `tokens` tokens, timing-only.
inline std::string tiny_model(int tokens = 3) {
    return "tokens = " + std::to_string(tokens) +
           "\nmodel = { generate = { arch = \"hybrid\", size = \"tiny\", seed = 1 } }\n";
}

} // namespace cardsim::test::sweep
