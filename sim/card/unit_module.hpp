#pragma once
// One unit of the card: reads a command's operands through the memory model, computes its
// results, writes them back, and takes the time its compute and its memory traffic need.

#include "engine/card/card_config.hpp"
#include "sim/card/card_context.hpp"

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <vector>

namespace cardsim::sim {

/// A unit instance of one kind (matvec, attention, norm, ...), as a SystemC module with two TLM-2.0
/// initiator sockets (DDR and on-chip SRAM). Event-driven: its thread sleeps until `start` hands it
/// a command, then issues the command's reads as one transaction per operand (a weight stream is
/// one transaction), computes (full mode), issues the writes once both its reads and its compute
/// are done, and wakes when the last write completes plus its pipeline latency:
///   end = start + max(read time, compute cycles) + write time + latency.
class UnitModule : public sc_core::sc_module {
public:
    tlm_utils::simple_initiator_socket<UnitModule> ddr;
    tlm_utils::simple_initiator_socket<UnitModule> sram;

    SC_HAS_PROCESS(UnitModule);
    UnitModule(const sc_core::sc_module_name& name, program::Unit kind, std::uint32_t instance,
               const card::UnitSpec& spec, CardContext& context);

    program::Unit unit_kind() const { return kind_; }
    bool busy() const { return busy_; }
    /// Hands the unit command `index` of the program; it must not be busy.
    void start(std::uint32_t index);
    /// The unit's busy signal (traced into a VCD when the run writes one).
    sc_core::sc_signal<bool>& busy_signal() { return busy_signal_; }
    /// Kernel cycles the unit has been busy in all.
    std::uint64_t busy_cycles() const { return busy_cycles_; }

private:
    void run();
    /// A byte range of an operand the command really moves.
    struct Span {
        std::uint64_t offset, bytes;
    };
    /// The parts of operand `k` of `c` the command moves: the whole operand, except for caches, of
    /// which an append writes each sequence's new rows and an attention reads each sequence's
    /// attended positions.
    std::vector<Span> traffic(const program::Command& c, std::size_t k) const;
    /// Moves operand `o` (read or write): its data whole (full runs), its timing over `spans`;
    /// returns when the last span completes, relative to now.
    sc_core::sc_time transport(const program::Operand& o, tlm::tlm_command cmd, std::vector<std::byte>& bytes,
                               const std::vector<Span>& spans, sc_core::sc_time issue, std::uint32_t index);
    /// One transaction: `bytes` bytes at `address` of the operand's space, timed (`timed`) or debug.
    sc_core::sc_time one(const program::Operand& o, tlm::tlm_command cmd, std::uint64_t address,
                         std::uint64_t bytes, unsigned char* data, bool timed, sc_core::sc_time issue,
                         std::uint32_t index);

    program::Unit kind_;
    std::uint32_t instance_;
    card::UnitSpec spec_;
    CardContext& ctx_;
    bool busy_ = false;
    std::uint32_t index_ = 0;
    std::uint64_t busy_cycles_ = 0;
    sc_core::sc_event start_;
    sc_core::sc_signal<bool> busy_signal_;
    std::vector<std::vector<std::byte>> buffers_;
    tlm::tlm_generic_payload payload_;
};

} // namespace cardsim::sim
