// Fuzz target: a program's DDR image (program::decode_image).
#include "engine/program/image.hpp"
#include "fuzz/support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return cardsim::fuzz::refusing([&] {
        auto image = cardsim::program::decode_image(cardsim::fuzz::bytes(data, size), "fuzz.ddr");
        (void)cardsim::program::digest(image);
    });
}
