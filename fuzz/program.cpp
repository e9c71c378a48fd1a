// Fuzz target: a program file and its host map. The input is a file without its checksum: the
// target appends the right one, so mutations reach the fields behind it; then the decoded program
// is validated without and with the default card config, and its io map built.
#include "engine/program/program.hpp"
#include "engine/card/card_config.hpp"
#include "engine/program/io_map.hpp"
#include "engine/program/validate.hpp"
#include "fuzz/support.hpp"

#include <xxhash.h>

#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace cardsim;
    static const card::CardConfig config = card::default_card_config();
    std::vector<std::byte> file(reinterpret_cast<const std::byte*>(data),
                                reinterpret_cast<const std::byte*>(data) + size);
    const std::uint64_t h = XXH64(data, size, 0);
    for (int i = 0; i < 8; ++i)
        file.push_back(std::byte((h >> (8 * i)) & 0xff));
    return fuzz::refusing([&] {
        auto p = program::decode(file, "fuzz.cardsim");
        program::validate(p, nullptr, "fuzz.cardsim");
        program::validate(p, &config, "fuzz.cardsim");
        (void)program::io_map(p.host);
        (void)program::disassemble(p, 0);
    });
}
