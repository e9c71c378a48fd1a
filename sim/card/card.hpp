#pragma once
// The card top: DDR4 channels, on-chip SRAM, the command processor and one module per unit
// instance, built from a card config, loaded with a program and its DDR image.

#include "engine/card/card_config.hpp"
#include "engine/program/image.hpp"
#include "engine/program/program.hpp"
#include "sim/card/card_context.hpp"
#include "sim/card/command_processor.hpp"
#include "sim/card/sram_port.hpp"
#include "sim/card/unit_module.hpp"
#include "sim/memory/ddr_memory.hpp"
#include "sim/memory/sram.hpp"

#include <systemc>

#include <memory>
#include <span>
#include <vector>

namespace cardsim::sim {

/// Whether a run computes real bits or times only.
enum class Mode { Full, TimingOnly };

/// The simulated card. Construction elaborates it (every unit instance runs its kind's
/// implementation in `units`) and loads the program: every DDR region must
/// lie inside the card's DDR and the arena inside its SRAM (else cardsim::Error naming the sizes);
/// the DDR image is written into the channels' stores. The host reads and writes the io region
/// (and any other) through `write` / `read` in zero time, between steps.
///
/// A card may hold a set of programs (buckets lowered together, lower::lower_set) that share the
/// weights, caches and states regions: `use` switches the io, arena and program regions to one of
/// them before the host writes a step's inputs, and the step runs its commands.
class Card : public sc_core::sc_module {
public:
    Card(const sc_core::sc_module_name& name, const card::CardConfig& config, const program::Program& program,
         const program::Image& image, Mode mode, units::UnitSet units);
    /// A card holding every program of `programs` (at least one; the first is in use).
    Card(const sc_core::sc_module_name& name, const card::CardConfig& config,
         std::span<const program::Program* const> programs, const program::Image& image, Mode mode,
         units::UnitSet units);

    /// Makes program `k` of the set the one the next steps run (its io, arena and program regions).
    void use(std::size_t k);

    /// Puts the image's chunks in the weights region (before anything else is written to DDR).
    void load(const program::Image& image);
    /// Writes host bytes into region `r` at `offset` (zero time).
    void write(program::Region r, std::uint64_t offset, std::span<const std::byte> bytes);
    /// Reads bytes of region `r` at `offset` (zero time).
    void read(program::Region r, std::uint64_t offset, std::span<std::byte> bytes) const;
    /// Runs the program once as step `step` with the io positions of its token rows (call from a
    /// SystemC thread); false when a bus error stopped it (see `context().fault`).
    bool run_step(std::uint32_t step, std::vector<std::uint32_t> positions);
    /// The same, with the io slots of its token rows (empty: a program without slots).
    bool run_step(std::uint32_t step, std::vector<std::uint32_t> positions, std::vector<std::uint32_t> slots);

    CardContext& context() { return context_; }
    const CardContext& context() const { return context_; }
    memory::DdrMemory& ddr() { return ddr_; }
    const memory::DdrMemory& ddr() const { return ddr_; }
    const std::vector<std::unique_ptr<UnitModule>>& units() const { return units_; }

private:
    std::vector<const program::Program*> programs_;
    CardContext context_;
    memory::DdrMemory ddr_;
    memory::Sram sram_;
    SramPort sram_port_;
    std::vector<std::unique_ptr<UnitModule>> units_;
    std::unique_ptr<CommandProcessor> processor_;
};

} // namespace cardsim::sim
