#pragma once
// `cardsim --version`: what this binary is and what it was built with.

#include <string>
#include <string_view>

namespace cardsim::cli {

/// The facts the build writes (cmake/Version.cmake, at every build): the project version, the
/// commit of the source tree (`git describe --always --dirty`, `unknown` outside git) and the
/// CMake build type.
struct BuildFacts {
    std::string_view version;
    std::string_view commit;
    std::string_view build_type;
};

/// This build's facts (generated: build/cli/version_facts.cpp).
extern const BuildFacts build_facts;

/// The text `cardsim --version` prints: one `key: value` line each for the version, the commit,
/// the build type, and the SystemC, Boost and Verilator (`none` without it) versions it was
/// built with.
std::string version_text();

} // namespace cardsim::cli
