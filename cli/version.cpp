// `cardsim --version`: the build facts and the versions of the libraries compiled in.

#include "cli/version.hpp"
#include "sim/rtl/rtl_matvec.hpp"

#include <boost/version.hpp>
#include <fmt/core.h>
#include <sysc/kernel/sc_ver.h>

namespace cardsim::cli {

std::string version_text() {
    return fmt::format(
        "cardsim {}\ncommit: {}\nbuild type: {}\nSystemC: {}.{}.{}\nBoost: {}.{}.{}\nVerilator: {}\n",
        build_facts.version, build_facts.commit, build_facts.build_type, SC_VERSION_MAJOR, SC_VERSION_MINOR,
        SC_VERSION_PATCH, BOOST_VERSION / 100000, BOOST_VERSION / 100 % 1000, BOOST_VERSION % 100,
        sim::rtl::rtl_verilator_version());
}

} // namespace cardsim::cli
