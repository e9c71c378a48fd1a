#include "cli/pack_cache_option.hpp"

#include "engine/lower/pack_cache.hpp"

#include <string>

namespace cardsim::cli {

boost::program_options::options_description pack_cache_options() {
    boost::program_options::options_description o("pack cache");
    o.add_options()("pack-cache", boost::program_options::value<std::string>(),
                    "keep packed weights in this directory and take them from it when they are there "
                    "(default: $CARDSIM_PACK_CACHE; none when unset or given empty)");
    return o;
}

std::filesystem::path pack_cache_of(const boost::program_options::variables_map& vm) {
    if (vm.count("pack-cache")) return vm["pack-cache"].as<std::string>();
    return lower::pack_cache_from_environment();
}

} // namespace cardsim::cli
