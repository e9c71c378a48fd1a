#include "engine/lower/target.hpp"

#include "engine/card/card_config.hpp"
#include "engine/kernels/formats.hpp"

#include <fmt/core.h>
#include <xxhash.h>

namespace cardsim::lower {

Target target_of(const card::CardConfig& c) {
    Target t;
    t.channels = c.ddr.channels;
    t.interleave_bytes = c.ddr.interleave_bytes;
    t.line = c.ddr.burst_bytes();
    t.ddr_bytes = c.ddr.total_bytes();
    t.channel_bytes = c.ddr.channel_bytes();
    t.weight_format = fmt::format("int{}", c.weights.code_bits);
    t.sram_bytes = c.sram.bytes;
    t.caps = shim::capabilities(c);
    t.numerics = c.numerics;
    t.config_digest = card::digest(c);
    t.pack_format = numerics::to_string(kernels::weight_format(c)); // refuses a format the card cannot run
    const auto packing = fmt::format("{}/row{}", t.pack_format, c.ddr.burst_bytes());
    t.pack_digest = XXH64(packing.data(), packing.size(), 0);
    t.storage.pack = [c](std::span<const float> values, std::size_t rows, std::size_t cols) {
        auto layout = kernels::matrix_layout(c, rows, cols);
        std::vector<std::byte> out(layout.bytes());
        numerics::quantize_into(values, layout, out);
        return out;
    };
    t.storage.pack_into = [c](std::span<const float> values, std::size_t rows, std::size_t cols,
                              std::span<std::byte> out) {
        numerics::quantize_into(values, kernels::matrix_layout(c, rows, cols), out);
    };
    t.storage.packed_bytes = [c](std::size_t rows, std::size_t cols) {
        return kernels::matrix_layout(c, rows, cols).bytes();
    };
    auto cache = c.numerics.cache;
    t.storage.cache_row_bytes = [cache](std::size_t head_dim) {
        return kernels::cache_row_bytes(cache, head_dim);
    };
    t.storage.state_element_bytes = kernels::state_element_bytes(c.numerics.state);
    return t;
}

} // namespace cardsim::lower
