// Fuzz target: a program's DDR image (program::decode_image), version 1 or 2. An image it accepts
// writes back (version 2) to a file that decodes to the same image with the same digest: anything
// else is a finding (std::abort).
#include "engine/program/image.hpp"
#include "fuzz/support.hpp"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return cardsim::fuzz::refusing([&] {
        using namespace cardsim::program;
        auto image = decode_image(cardsim::fuzz::bytes(data, size), "fuzz.ddr");
        const auto d = digest(image);
        auto again = decode_image(encode(image), "fuzz.ddr, written back");
        if (!(again == image) || digest(again) != d) std::abort();
    });
}
