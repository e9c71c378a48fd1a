#include "support.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace cardsim::models::test {

SynthResult tiny(SynthArch arch, const std::filesystem::path& dir, std::uint64_t seed, Dtype dtype,
                 unsigned shards) {
    SynthOptions o;
    o.arch = arch;
    o.size = SynthSize::Tiny;
    o.seed = seed;
    o.dtype = dtype;
    o.shards = shards;
    o.threads = 1;
    return make_model(o, dir);
}

void write_file(const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

double relative_error(std::span<const double> a, std::span<const double> b) {
    double err = 0, scale = 0;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
        err = std::max(err, std::fabs(a[i] - b[i]));
        scale = std::max(scale, std::fabs(b[i]));
    }
    if (a.size() != b.size()) return INFINITY;
    return scale > 0 ? err / scale : err;
}

} // namespace cardsim::models::test
