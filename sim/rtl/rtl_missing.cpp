// The RTL entry points of a build without Verilator: none of the RTL exists.

#include "engine/error.hpp"
#include "sim/rtl/rtl_gelu.hpp"
#include "sim/rtl/rtl_matvec.hpp"

namespace cardsim::sim::rtl {

bool rtl_available() {
    return false;
}

std::string_view rtl_verilator_version() {
    return "none";
}

std::uint32_t rtl_matvec_width() {
    return 0;
}

std::shared_ptr<const units::Unit> rtl_matvec_unit(const card::CardConfig&, RtlVariant) {
    throw Error("--rtl matvec: this cardsim was built without Verilator, so it has no RTL model (install "
                "verilator, e.g. with scripts/setup.sh, and rebuild)");
}

void rtl_gelu(std::span<const std::uint32_t>, std::span<std::uint32_t>) {
    throw Error("rtl_gelu: this cardsim was built without Verilator, so it has no RTL model");
}

} // namespace cardsim::sim::rtl
