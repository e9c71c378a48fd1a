// Fuzz target: a sweep spec (TOML: models, axes, skip_if), and its grid with every constraint
// evaluated when the grid is small.
#include "cli/sweep/grid.hpp"
#include "cli/sweep/spec.hpp"
#include "fuzz/support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace cardsim::cli::sweep;
    return cardsim::fuzz::refusing([&] {
        auto spec = parse_sweep_spec(cardsim::fuzz::text(data, size), "/nonexistent/cardsim-fuzz/spec.toml");
        std::size_t points = spec.models.size();
        for (auto& a : spec.axes)
            points *= a.values.size();
        if (points <= 4096) (void)build_grid(spec);
    });
}
