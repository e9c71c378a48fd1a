// Fuzz target: a skip_if expression, parsed and evaluated with every name a number (its length) or,
// for names starting with `s`, a string.
#include "cli/sweep/expr.hpp"
#include "fuzz/support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace cardsim::cli::sweep;
    return cardsim::fuzz::refusing([&] {
        auto e = Expression::parse(cardsim::fuzz::text(data, size), "fuzz");
        (void)e.evaluate(
            [](const std::string& name) -> Value {
                if (!name.empty() && name[0] == 's') return name;
                return double(name.size());
            },
            "fuzz");
    });
}
