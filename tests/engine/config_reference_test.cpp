// The card config's reference (docs/config.md): every key of the field table, each documented by
// the default config's comments; a key without a comment is named.

#include "engine/card/card_config.hpp"
#include "engine/card/config_reference.hpp"

#include <catch2/catch.hpp>

#include <sstream>

using namespace cardsim::card;

TEST_CASE("every_config_key_has_documentation_in_the_default_config", "[engine][config]") {
    const auto reference = config_reference(default_card_config_text());
    INFO("undocumented: " << (reference.undocumented.empty() ? "" : reference.undocumented.front()));
    CHECK(reference.undocumented.empty());
}

TEST_CASE("the_reference_has_a_row_for_every_key_of_the_canonical_config", "[engine][config]") {
    const auto reference = config_reference(default_card_config_text());
    std::istringstream canonical(canonical_text(default_card_config()));
    std::size_t keys = 0;
    for (std::string line; std::getline(canonical, line);) {
        const std::string key = line.substr(0, line.find(" = "));
        INFO(key);
        CHECK(reference.markdown.find("| `" + key + "` |") != std::string::npos);
        ++keys;
    }
    CHECK(keys > 100);
    CHECK(reference.markdown.find("| `ddr.timing.tck_ps` |") !=
          std::string::npos); // check-only, commented out
}

TEST_CASE("a_key_without_a_comment_is_named_undocumented", "[engine][config]") {
    std::string text(default_card_config_text());
    // Drop the comment above `cl` (and the line that ends it): `cl` and its run lose their documentation.
    const auto at = text.find("# CAS (read) latency");
    REQUIRE(at != std::string::npos);
    text.erase(at, text.find('\n', at) - at + 1);
    const auto reference = config_reference(text);
    REQUIRE(!reference.undocumented.empty());
    CHECK(reference.undocumented.front() == "ddr.timing.cl");
}
