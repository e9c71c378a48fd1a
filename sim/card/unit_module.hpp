#pragma once
// One unit of the card: reads a command's operands through the memory model, computes its
// results, writes them back, and takes the time its compute and its memory traffic need.

#include "engine/card/card_config.hpp"
#include "sim/card/card_context.hpp"
#include "sim/card/phase_critical.hpp"
#include "sim/memory/stall_extension.hpp"

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <array>
#include <vector>

namespace cardsim::sim {

/// A unit instance of one kind (matvec, attention, norm, ...), as a SystemC module with two TLM-2.0
/// initiator sockets (DDR and on-chip SRAM): the timing loop every unit shares. What a command is
/// for the unit (its work, the bytes it moves, what it computes) comes from its kind's
/// implementation in the card's `units::UnitSet` (sim/units/). Event-driven: its thread sleeps until `start`
/// hands it a command, then issues the command's reads as one data-less transaction per operand (a weight
/// stream is one transaction), computes (full mode) on the operands in place through the
/// memories' DMI grants, issues the writes once both its reads and its compute are done, and
/// wakes when the last write completes plus its pipeline latency:
///   end = start + max(read time, compute cycles) + write time + latency.
/// Data moves at the command's start in simulation order, as the scoreboard allows; timing never
/// depends on data, so a timing-only run has the same cycles.
class UnitModule : public sc_core::sc_module {
public:
    tlm_utils::simple_initiator_socket<UnitModule> ddr;
    tlm_utils::simple_initiator_socket<UnitModule> sram;

    SC_HAS_PROCESS(UnitModule);
    UnitModule(const sc_core::sc_module_name& name, program::Unit kind, std::uint32_t instance,
               const card::UnitSpec& spec, CardContext& context);
    ~UnitModule() override;

    program::Unit unit_kind() const { return kind_; }
    bool busy() const { return busy_; }
    /// Hands the unit command `index` of the program, with the waits before its start (deps,
    /// unit, issue); it must not be busy.
    void start(std::uint32_t index, const TimeSplit& waits);
    /// Kernel cycles the unit has been busy in all.
    std::uint64_t busy_cycles() const { return busy_cycles_; }

private:
    void run();
    /// Adds `cycles` kernel cycles of a phase bound by `critical` to `time`: a DDR phase's stall
    /// categories in proportion to its critical channel's chain, an SRAM access to `sram`, none to
    /// `compute`.
    static void attribute(TimeSplit& time, std::uint64_t cycles, const PhaseCritical& critical);
    /// Times operand `o` (read or write) over `spans`, one transaction each and without data;
    /// returns when the last span completes, relative to now.
    sc_core::sc_time transport(const program::Operand& o, tlm::tlm_command cmd,
                               const std::vector<units::Span>& spans, sc_core::sc_time issue,
                               std::uint32_t index, PhaseCritical& critical);
    /// One transaction: `bytes` bytes at `address` of the operand's space, timed (`timed`) or debug.
    sc_core::sc_time one(const program::Operand& o, tlm::tlm_command cmd, std::uint64_t address,
                         std::uint64_t bytes, unsigned char* data, bool timed, sc_core::sc_time issue,
                         std::uint32_t index, PhaseCritical* critical = nullptr);
    /// Operand `o`'s bytes in place, through the memory's DMI grant (a bus error, and nothing,
    /// when the operand leaves its region or the grant).
    std::span<std::byte> in_place(const program::Operand& o, std::uint32_t index);
    /// The DDR's backward call: its DMI grants end (a lent range was written); ask again.
    void invalidate_ddr(sc_dt::uint64 start, sc_dt::uint64 end);
    /// Whether operand `k` of `c` shares bytes with another operand of which one of the two is
    /// written: such an operand is computed on a copy, so the kernel sees the bytes as they were.
    bool overlaps_a_write(const program::Command& c, std::size_t k);
    /// Records the experts route command `c` (command `index`, just computed) chose as the step's
    /// routing of its router (CardContext::routing), for the expert matvecs that follow.
    void record_routing(const program::Command& c, std::uint32_t index);

    program::Unit kind_;
    std::uint32_t instance_;
    card::UnitSpec spec_;
    const units::Unit& behaviour_; ///< this kind's work, traffic and compute
    CardContext& ctx_;
    bool busy_ = false;
    std::uint32_t index_ = 0;
    std::uint64_t busy_cycles_ = 0;
    sc_core::sc_event start_;
    std::vector<std::vector<std::byte>> buffers_; ///< copies of overlapping operands
    std::vector<std::span<std::byte>> views_;     ///< each operand's bytes for the kernel
    /// Each channel's part of an operand (ChannelInterleave::split). A member, not a local of
    /// `run`: a thread's locals are never destroyed (it waits forever when the run ends).
    std::vector<memory::ChannelInterleave::Range> ranges_;
    std::vector<sc_core::sc_time> read_done_; ///< when each operand's reads completed (a member: as ranges_)
    tlm::tlm_dmi ddr_dmi_, sram_dmi_;
    bool have_ddr_dmi_ = false, have_sram_dmi_ = false;
    TimeSplit waits_;                  ///< the waits of the command handed over
    memory::StallExtension stalls_;    ///< on payload_: the DDR's split of each request
    tlm::tlm_generic_payload payload_; ///< declared after stalls_, cleared of it first
};

} // namespace cardsim::sim
