// Fuzz target: a checkpoint's config.json (strict JSON, then the architecture's fields).
#include "fuzz/support.hpp"
#include "models/json.hpp"
#include "models/recognise.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return cardsim::fuzz::refusing([&] {
        auto v = cardsim::models::parse_json(cardsim::fuzz::text(data, size), "config.json");
        if (auto* o = v.if_object()) cardsim::models::parse_config(*o, "config.json");
    });
}
