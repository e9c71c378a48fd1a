#include "engine/error.hpp"
#include "engine/program/epilogue.hpp"
#include "sim/rtl/rtl_matvec.hpp"

#include <fmt/core.h>

namespace cardsim::sim::rtl {

void check_rtl_program(const program::Program& program) {
    for (std::size_t i = 0; i < program.commands.size(); ++i) {
        const auto& c = program.commands[i];
        if (c.opcode == program::Opcode::Matvec && program::epilogue_of(c.flags) == graph::Epilogue::Gelu)
            throw Error(
                fmt::format("--rtl matvec: command {} is a matvec with the GELU epilogue, which the RTL "
                            "matvec does not implement (erf is not bit-exact in rtl/matvec.sv); run this "
                            "model without --rtl matvec",
                            i));
    }
}

} // namespace cardsim::sim::rtl
