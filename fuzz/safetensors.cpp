// Fuzz target: a safetensors file's header (models::parse_safetensors).
#include "models/safetensors.hpp"
#include "fuzz/support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return cardsim::fuzz::refusing(
        [&] { cardsim::models::parse_safetensors(cardsim::fuzz::bytes(data, size), "fuzz"); });
}
