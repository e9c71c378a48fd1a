#pragma once
// `--pack-cache DIR`: where compile, run and serve keep packed weights (engine/lower/pack_cache.hpp).

#include <filesystem>

#include <boost/program_options.hpp>

namespace cardsim::cli {

/// `--pack-cache DIR` (an empty DIR: none, whatever the environment says).
boost::program_options::options_description pack_cache_options();

/// The pack cache directory the parsed options ask for: `--pack-cache` when given (empty: none),
/// else $CARDSIM_PACK_CACHE (lower::pack_cache_from_environment), else none (empty).
std::filesystem::path pack_cache_of(const boost::program_options::variables_map& vm);

} // namespace cardsim::cli
