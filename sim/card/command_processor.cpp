#include "sim/card/command_processor.hpp"

#include "sim/card/hazard.hpp"

#include <fmt/core.h>

namespace cardsim::sim {

CommandProcessor::CommandProcessor(const sc_core::sc_module_name& name, CardContext& context,
                                   std::vector<UnitModule*> units)
    : sc_core::sc_module(name), ddr("ddr"), ctx_(context), units_(std::move(units)) {}

bool CommandProcessor::run_step() {
    auto& prog = *ctx_.program;
    const auto issue = ctx_.clock.time_of(ctx_.config.command_processor.issue_cycles);
    ctx_.done.assign(prog.commands.size(), false);
    // Fetch: the whole command stream in one DDR read.
    auto& pr = ctx_.region(program::Region::Program);
    if (pr.present && pr.size) {
        payload_.set_command(tlm::TLM_READ_COMMAND);
        payload_.set_address(pr.base);
        payload_.set_data_length(static_cast<unsigned>(pr.size));
        payload_.set_streaming_width(static_cast<unsigned>(pr.size));
        payload_.set_data_ptr(nullptr); // the decoded program is already at hand: time the fetch only
        payload_.set_byte_enable_ptr(nullptr);
        payload_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        ddr->b_transport(payload_, delay);
        if (payload_.is_response_error()) {
            ctx_.fault =
                fmt::format("bus error at step {}: fetching the program at {:#x} ({} bytes) failed: {}",
                            ctx_.step, pr.base, pr.size, payload_.get_response_string());
            return false;
        }
        sc_core::wait(ctx_.clock.time_of(ctx_.clock.cycle_at_or_after(sc_core::sc_time_stamp() + delay)) -
                      sc_core::sc_time_stamp());
    }
    std::vector<std::uint32_t> in_flight; // issued, not yet completed
    auto now = [&] { return ctx_.clock.cycle_at_or_after(sc_core::sc_time_stamp()); };
    for (std::uint32_t i = 0; i < prog.commands.size(); ++i) {
        auto& c = prog.commands[i];
        // Where the command waits before its start: the cycle it is reached, its dependencies
        // done, a unit free, then the issue cycles.
        const std::uint64_t reached = now();
        for (auto d : c.deps)
            while (!ctx_.done[d]) {
                sc_core::wait(ctx_.command_done);
                if (ctx_.fault) return false;
            }
        const std::uint64_t deps_done = now();
        UnitModule* unit = nullptr;
        bool exists = false;
        for (;;) {
            for (auto* u : units_)
                if (u->unit_kind() == c.unit) {
                    exists = true;
                    if (!u->busy()) {
                        unit = u;
                        break;
                    }
                }
            if (unit || !exists) break;
            sc_core::wait(ctx_.command_done);
            if (ctx_.fault) return false;
        }
        if (!exists) {
            ctx_.bus_error(i, fmt::format("the card has no {} unit", card::name(c.unit)));
            return false;
        }
        const std::uint64_t unit_free = now();
        sc_core::wait(issue);
        if (ctx_.fault) return false; // a command in flight faulted meanwhile
        TimeSplit waits;
        waits[TimePart::Deps] = deps_done - reached;
        waits[TimePart::Unit] = unit_free - deps_done;
        waits[TimePart::Issue] = now() - unit_free;
        // The hazard check: a command in flight now has no dependency path to this one (it would
        // have completed first), so touching the same bytes, one writing, is a race.
        std::erase_if(in_flight, [&](std::uint32_t j) { return ctx_.done[j]; });
        for (auto j : in_flight)
            if (auto why = race(ctx_, j, i)) {
                ctx_.fault = *why; // the step ends here; the commands in flight complete
                return false;
            }
        in_flight.push_back(i);
        unit->start(i, waits);
    }
    for (std::uint32_t i = 0; i < prog.commands.size(); ++i)
        while (!ctx_.done[i]) {
            sc_core::wait(ctx_.command_done);
            if (ctx_.fault) return false;
        }
    return !ctx_.fault;
}

} // namespace cardsim::sim
