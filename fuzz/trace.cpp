// Fuzz target: a run trace file (traces::parse_trace).
#include "fuzz/support.hpp"
#include "traces/reader.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return cardsim::fuzz::refusing([&] {
        (void)cardsim::traces::parse_trace(std::string(cardsim::fuzz::text(data, size)), "fuzz.trace");
    });
}
