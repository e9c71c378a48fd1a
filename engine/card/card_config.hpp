#pragma once
// The card configuration: every number the simulator's timing and the engine's shim read.
// Plain C++ (no SystemC): the engine's shim and the simulator share it. The defaults live in
// configs/d5005.toml, which is compiled in; load a config with `load_card_config`.

#include "engine/card/unit_kind.hpp"
#include "engine/numerics/knob.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace cardsim::card {

/// The clocks of the card's logic.
struct ClockConfig {
    double kernel_mhz = 0; ///< kernel (user) clock of the units, MHz
    friend bool operator==(const ClockConfig&, const ClockConfig&) = default;
};

/// Ranks, banks and rows of one DDR channel.
struct DdrGeometry {
    std::uint32_t ranks = 1;           ///< ranks per channel (chip selects sharing its buses)
    std::uint32_t bank_groups = 0;     ///< bank groups per rank
    std::uint32_t banks_per_group = 0; ///< banks per bank group
    std::uint32_t row_bytes = 0;       ///< row (page) size of the rank, bytes
    /// Banks of one rank in all.
    std::uint32_t banks() const { return bank_groups * banks_per_group; }
    /// Banks of the channel (all ranks).
    std::uint32_t channel_banks() const { return banks() * ranks; }
    friend bool operator==(const DdrGeometry&, const DdrGeometry&) = default;
};

/// The DDR timing parameters, in memory-clock cycles (tCK = 2e6 / speed_mts ps).
struct DdrTiming {
    std::uint32_t cl = 0, cwl = 0, trcd = 0, trp = 0, tras = 0;
    std::uint32_t tccd_s = 0, tccd_l = 0, trrd_s = 0, trrd_l = 0, tfaw = 0;
    std::uint32_t twtr_s = 0, twtr_l = 0, trtw = 0, twr = 0, trtp = 0;
    std::uint32_t trfc = 0, trefi = 0;
    std::uint32_t trtrs = 0;        ///< rank-to-rank switch: idle data-bus cycles between ranks
    std::uint32_t burst_length = 0; ///< beats per burst (BL8)
    /// Cycles one burst occupies the data bus (burst_length / 2, double data rate).
    std::uint32_t burst_cycles() const { return burst_length / 2; }
    friend bool operator==(const DdrTiming&, const DdrTiming&) = default;
};

/// What a DDR controller does with a row after an access.
enum class PagePolicy { Open, Closed };

/// How a DDR controller orders the requests it holds.
enum class SchedulerKind {
    FrFcfs, ///< per-bank queues, row hits first, then the oldest; read/write grouping; a starvation cap
    Fcfs,   ///< arrival order (column commands in order, row commands early, writes posted in batches)
};

/// The per-channel memory controller: how addresses map onto banks, rows kept open, writes
/// queued, requests ordered.
struct DdrController {
    std::string address_map; ///< bit-order string, e.g. "row:bank:column:bankgroup"
    PagePolicy page_policy = PagePolicy::Open;
    std::uint32_t write_queue = 0; ///< posted-write queue depth per channel, bursts (0 = none)
    SchedulerKind scheduler = SchedulerKind::FrFcfs;
    std::uint32_t bank_queue_depth = 0;     ///< reads each bank's queue holds (FR-FCFS)
    std::uint32_t starvation_limit = 0;     ///< times a burst may be passed over before it goes next
    bool stagger_row_switches = false;      ///< drain first the banks that must switch rows soonest
    std::uint32_t write_high_watermark = 0; ///< queued writes that start a write batch
    std::uint32_t write_low_watermark = 0;  ///< queued writes at which a write batch ends
    friend bool operator==(const DdrController&, const DdrController&) = default;
};

/// The card's DDR memory: independent channels interleaved over one address space.
struct DdrConfig {
    std::uint32_t channels = 0;
    std::uint64_t capacity_mib = 0;     ///< per channel
    std::uint32_t data_bits = 0;        ///< data bus width of one channel
    std::uint32_t speed_mts = 0;        ///< data rate, MT/s (memory clock = speed / 2)
    std::uint64_t interleave_bytes = 0; ///< channel interleave granule
    std::uint32_t port_bits = 0;        ///< width of a channel's user port (kernel clock)
    DdrGeometry geometry;
    DdrTiming timing;
    DdrController controller;

    /// Bytes of one channel.
    std::uint64_t channel_bytes() const { return capacity_mib << 20; }
    /// Bytes of all channels (the card's DDR address space, from 0).
    std::uint64_t total_bytes() const { return channel_bytes() * channels; }
    /// Bytes one burst moves (data_bits / 8 x burst_length; 64 B for DDR4 x64 BL8).
    std::uint32_t burst_bytes() const { return data_bits / 8 * timing.burst_length; }
    /// The memory clock, MHz (half the data rate).
    double clock_mhz() const { return speed_mts / 2.0; }
    /// The memory clock period, ps.
    double tck_ps() const { return 2.0e6 / speed_mts; }
    /// Peak bandwidth of one channel, bytes per second.
    double channel_peak_bytes_per_second() const { return speed_mts * 1.0e6 * data_bits / 8.0; }
    friend bool operator==(const DdrConfig&, const DdrConfig&) = default;
};

/// The on-chip SRAM (M20K) that holds the arena and unit buffers.
struct SramConfig {
    std::uint64_t bytes = 0;           ///< capacity
    std::uint32_t latency = 0;         ///< kernel cycles per access
    std::uint32_t bytes_per_cycle = 0; ///< bytes an access moves per kernel cycle
    friend bool operator==(const SramConfig&, const SramConfig&) = default;
};

/// The command processor: how long it takes to hand a command to a unit.
struct CommandProcessorConfig {
    std::uint32_t issue_cycles = 0; ///< kernel cycles to decode and issue one command
    friend bool operator==(const CommandProcessorConfig&, const CommandProcessorConfig&) = default;
};

/// How many units of one kind the card has, how wide and how deep each is.
struct UnitSpec {
    std::uint32_t count = 0;   ///< instances; 0 = the card has no such unit
    std::uint32_t width = 0;   ///< work per kernel cycle (MACs, elements or bytes, per kind)
    std::uint32_t latency = 0; ///< pipeline latency, kernel cycles
    bool present() const { return count > 0; }
    friend bool operator==(const UnitSpec&, const UnitSpec&) = default;
};

/// What the matvec unit adds to a plain product.
struct MatvecFlags {
    bool bias = false;  ///< adds a bias vector
    bool scale = false; ///< multiplies by a constant
    friend bool operator==(const MatvecFlags&, const MatvecFlags&) = default;
};

/// What the attention unit takes beyond one query over its whole cache.
struct AttentionFlags {
    bool window = false;           ///< a sliding window
    bool sinks = false;            ///< attention sinks
    bool softcap = false;          ///< soft-capped scores
    std::uint32_t array_width = 0; ///< cache elements per cycle with `attention = "array"` math
    friend bool operator==(const AttentionFlags&, const AttentionFlags&) = default;
};

/// What the embed unit does beyond a row gather.
struct EmbedFlags {
    bool scale = false; ///< scales the row by a constant
    friend bool operator==(const EmbedFlags&, const EmbedFlags&) = default;
};

/// What the rotation unit takes beyond theta's rotary frequencies.
struct RotationFlags {
    bool yarn = false; ///< rotates by a table of per-pair frequencies, cos and sin scaled (YaRN)
    friend bool operator==(const RotationFlags&, const RotationFlags&) = default;
};

/// What the SiLU-multiply unit computes beyond silu(gate) · up.
struct SiluMulFlags {
    bool clamp = false; ///< gpt-oss's clamped SwiGLU, (clamp(up) + 1) · g · σ(α · g), g = min(gate, limit)
    friend bool operator==(const SiluMulFlags&, const SiluMulFlags&) = default;
};

/// What the expert path adds beyond the router unit's width and latency.
struct RouterFlags {
    /// Kernel cycles the matvec unit takes, once an expert's entry of the per-layer expert table
    /// has arrived from DDR, to turn it into the first request of that expert's weight stream.
    std::uint32_t resolve_latency = 0;
    friend bool operator==(const RouterFlags&, const RouterFlags&) = default;
};

/// The card's unit set: a spec per kind and the capability flags of the units that have some.
struct UnitSet {
    std::array<UnitSpec, unit_kind_count> specs{};
    MatvecFlags matvec;
    AttentionFlags attention;
    EmbedFlags embed;
    RouterFlags router;
    RotationFlags rotation;
    SiluMulFlags silu_mul;

    const UnitSpec& operator[](UnitKind kind) const { return specs[static_cast<std::size_t>(kind)]; }
    UnitSpec& operator[](UnitKind kind) { return specs[static_cast<std::size_t>(kind)]; }
    /// Whether the card has at least one unit of `kind`.
    bool has(UnitKind kind) const { return (*this)[kind].present(); }
    friend bool operator==(const UnitSet&, const UnitSet&) = default;
};

/// Capabilities of the card as a whole (not of one unit).
struct Capabilities {
    bool relu = false;    ///< the activation units apply ReLU
    bool experts = false; ///< the card routes tokens to experts
    friend bool operator==(const Capabilities&, const Capabilities&) = default;
};

/// How the cards of a system are joined (`[system] topology`).
enum class Topology {
    Ring,   ///< card k's ports to cards k - 1 and k + 1 (mod N); two cards share both ports' links
    Pairs,  ///< cards 2j and 2j + 1 joined by every port; no link between pairs
    Switch, ///< every card's ports to one switch, which forwards a frame after `link.switch_latency_ns`
};

/// The system the card is one of (`[system]`): how many cards, joined how. One card is today's
/// card on its own; more need a plan (`--plan pp`). Not in the card's digest: it changes no
/// card's program and no card's timing (a plan's programs carry their sends and receives).
/// How a tensor-parallel plan's cards join the parts of a row-parallel matvec (`[system] exchange`).
enum class Exchange {
    Exact, ///< every card's exact parts (24 bytes an output) gathered and rounded once: the one-card bits
    F32,   ///< each card's f32 outputs (4 bytes) summed in ring order: cheaper, not bit-exact
};

struct SystemConfig {
    std::uint32_t cards = 0;
    Topology topology = Topology::Ring;
    Exchange exchange = Exchange::Exact;
    friend bool operator==(const SystemConfig&, const SystemConfig&) = default;
};

/// One card-to-card link through a QSFP port (`[link]`): data rate, latency and framing.
struct LinkConfig {
    double gbps = 0;                        ///< data rate of one port's link, each direction, Gb/s
    double latency_ns = 0;                  ///< one hop, from a sender's last byte out to the receiver's
    std::uint32_t ports = 0;                ///< QSFP ports a card has
    std::uint32_t frame_payload_bytes = 0;  ///< most payload bytes one frame carries
    std::uint32_t frame_overhead_bytes = 0; ///< bytes a frame adds on the wire (header, check, gap)
    /// A switch's port-to-port latency, ns (topology "switch"): it forwards a message cut-through,
    /// its first bytes this long after they arrived.
    double switch_latency_ns = 0;
    /// Seconds the link takes to carry `bytes` of payload over `ports` parallel port links: the
    /// frames' wire bytes at the data rate, plus one hop's latency.
    double seconds(std::uint64_t bytes, std::uint32_t ports_used = 1) const {
        const std::uint64_t frames = bytes ? (bytes + frame_payload_bytes - 1) / frame_payload_bytes : 0;
        const double wire = double(bytes + frames * frame_overhead_bytes);
        return wire * 8.0 / (gbps * 1e9 * ports_used) + latency_ns * 1e-9;
    }
    friend bool operator==(const LinkConfig&, const LinkConfig&) = default;
};

/// How a block's scale is stored.
enum class ScaleKind { E8M0, F16 };

/// The weight format the engine quantises checkpoints to.
struct WeightFormat {
    std::uint32_t code_bits = 0;             ///< 8 or 4
    std::uint32_t block_size = 0;            ///< weights per block scale
    std::optional<std::uint32_t> group_size; ///< weights per exact f32 rounding; none = the row
    ScaleKind scale = ScaleKind::E8M0;
    friend bool operator==(const WeightFormat&, const WeightFormat&) = default;
};

/// The FPGA device and the board around it: what a config's logic must fit in (`[fit.device]`).
struct DeviceConfig {
    std::string name;                            ///< as the fit verdict names it
    std::uint64_t alms = 0, dsps = 0, m20ks = 0; ///< the device's adaptive logic modules, DSP and M20K blocks
    std::uint32_t m20k_bits = 0;                 ///< bits of one M20K block
    std::uint64_t shell_alms = 0, shell_dsps = 0, shell_m20ks = 0; ///< what the board's shell (FIM) takes
    double board_watts = 0;                                        ///< the board's power envelope
    friend bool operator==(const DeviceConfig&, const DeviceConfig&) = default;
};

/// What one unit kind costs: per lane (`width` of its measure, per instance) and per instance.
struct UnitCost {
    double dsp_per_lane = 0, alm_per_lane = 0; ///< DSP blocks and ALMs per lane
    double alm_fixed = 0, m20k_fixed = 0; ///< ALMs and M20K blocks per instance (control, buffers, tables)
    bool reduction = false; ///< its lanes feed one adder (or compare) tree: its pipeline bounds the clock
    friend bool operator==(const UnitCost&, const UnitCost&) = default;
};

/// What the numerics knobs add to the units' costs (`[fit.knobs]`).
struct KnobCosts {
    double wide_dsp_factor = 0;        ///< matvec DSPs per lane x this with `scaling = "per_block"`
    double wide_alm_factor = 0;        ///< matvec ALMs per lane x this with `scaling = "per_block"`
    double two_word_alms = 0;          ///< ALMs per matvec instance for the second activation word
    double array_dsp_per_lane = 0;     ///< attention DSPs per lane with `attention = "array"`
    double f16_state_alm_per_lane = 0; ///< delta ALMs per lane for the f16 state conversions
    double int8_cache_alms = 0;        ///< ALMs per attention and cache append instance for int8 caches
    double hadamard_alms = 0;          ///< ALMs per cache append instance for `int8_hadamard`
    friend bool operator==(const KnobCosts&, const KnobCosts&) = default;
};

/// The Fmax estimate's parameters (`[fit.clock]`).
struct ClockModel {
    double base_mhz = 0;                ///< Fmax of a lightly filled, well pipelined design
    double knee = 0;                    ///< utilisation up to which Fmax holds at `base_mhz`
    double full_mhz = 0;                ///< Fmax at 100 % utilisation (linear from the knee)
    std::uint32_t levels_per_stage = 0; ///< adder-tree levels one pipeline stage closes at `base_mhz`
    friend bool operator==(const ClockModel&, const ClockModel&) = default;
};

/// The power estimate's parameters (`[fit.power]`).
struct PowerModel {
    double static_watts = 0;                                    ///< the device's static power
    double shell_watts = 0;                                     ///< the shell's (PCIe, EMIF PHYs, BMC) power
    double dsp_uw_per_mhz = 0;                                  ///< dynamic µW per busy DSP block per MHz
    double m20k_uw_per_mhz = 0;                                 ///< dynamic µW per busy M20K block per MHz
    double alm_uw_per_mhz = 0;                                  ///< dynamic µW per 1,000 busy ALMs per MHz
    double ddr_background_watts = 0;                            ///< per DDR channel, active standby
    double ddr_read_pj_per_byte = 0, ddr_write_pj_per_byte = 0; ///< DDR energy per byte moved
    friend bool operator==(const PowerModel&, const PowerModel&) = default;
};

/// Resources, clock and power: the `[fit]` estimates of whether a config can be built. They never
/// change a program or its timing, so the config digest leaves them out (as the name).
struct FitModel {
    DeviceConfig device;
    std::array<UnitCost, unit_kind_count> units{};
    KnobCosts knobs;
    ClockModel clock;
    PowerModel power;
    const UnitCost& operator[](UnitKind kind) const { return units[static_cast<std::size_t>(kind)]; }
    friend bool operator==(const FitModel&, const FitModel&) = default;
};

/// One card configuration. Every field is documented, with its default and unit, in
/// configs/d5005.toml; load one with `load_card_config` (or `default_card_config`), never by hand
/// unless a test needs a variation of a loaded one.
struct CardConfig {
    std::string name; ///< cosmetic; not part of the digest
    ClockConfig clock;
    DdrConfig ddr;
    SramConfig sram;
    CommandProcessorConfig command_processor;
    UnitSet units;
    Capabilities capabilities;
    numerics::EngineNumerics numerics;
    WeightFormat weights;
    SystemConfig system; ///< the system of cards: not in the digest
    LinkConfig link;     ///< the links between cards: not in the digest
    FitModel fit;        ///< estimates only: not in the digest

    /// Whether attention over a sliding window runs natively (the attention unit takes a window,
    /// or the card has a separate windowed attention unit).
    bool windowed_attention() const { return units.attention.window || units.has(UnitKind::AttentionWindow); }
    /// The lanes (work per cycle) one unit of `kind` runs at this config's knob point: the attention
    /// unit's `array_width` with array math, else the unit's `width`.
    std::uint32_t lanes(UnitKind kind) const {
        if (kind == UnitKind::Attention && numerics.attention == numerics::AttentionMath::Array)
            return units.attention.array_width;
        return units[kind].width;
    }
    /// The key under `units.KIND` that `lanes(kind)` reads: `array_width` for the attention unit
    /// with array math, else `width` (what a config overlay of fitted widths must write).
    std::string_view lanes_key(UnitKind kind) const {
        if (kind == UnitKind::Attention && numerics.attention == numerics::AttentionMath::Array)
            return "array_width";
        return "width";
    }
    /// Whether the card has a GELU unit (or a GeGLU unit, which contains one).
    bool gelu() const { return units.has(UnitKind::Gelu) || units.has(UnitKind::Geglu); }
    /// The least seconds `channels` channels can move `read` and `write` bytes in: at their DRAM's
    /// peak for both together, and through their user ports, whose read and write lanes each move
    /// ddr.port_bits / 8 bytes a kernel cycle (below 300 MHz on the default card the ports bind).
    double ddr_bound_seconds(double read, double write, double channels) const {
        const double dram = (read + write) / (channels * ddr.channel_peak_bytes_per_second());
        const double port = channels * ddr.port_bits / 8.0 * clock.kernel_mhz * 1e6;
        return std::max({dram, read / port, write / port});
    }
    /// The bandwidth that bound gives `read` and `write` bytes on `channels` channels (their DRAM's
    /// peak when the ports do not bind; with nothing moved, the lower of the DRAM's and a port's).
    double ddr_peak_bytes_per_second(double read, double write, double channels) const {
        const double bound = ddr_bound_seconds(read, write, channels);
        if (bound > 0) return (read + write) / bound;
        return channels *
               std::min(ddr.channel_peak_bytes_per_second(), ddr.port_bits / 8.0 * clock.kernel_mhz * 1e6);
    }
    friend bool operator==(const CardConfig&, const CardConfig&) = default;
};

/// One `--set path=value`: a dotted key path and the value's text (TOML, or a bare word taken as a
/// string).
struct Override {
    std::string path;
    std::string value;
    std::string given = {}; ///< how the user gave it, for messages (empty: `--set path=value`)
    /// The option as messages name it.
    std::string where() const { return given.empty() ? "--set " + path + "=" + value : given; }
};

/// Splits `path=value` into an Override; an argument without `=` or with an empty path is a
/// cardsim::Error saying what was expected.
Override parse_override(std::string_view text);

/// The text of the built-in default config (configs/d5005.toml as compiled in).
std::string_view default_card_config_text();

/// The built-in default card (the D5005).
CardConfig default_card_config();

/// Loads a card config: the built-in default, with `file` (if any) merged over it, then each
/// override in order. Any unknown key, value of the wrong type or out of range, or inconsistent
/// combination is a cardsim::Error naming the file (or the --set) and line, the key and what was
/// expected.
CardConfig load_card_config(const std::optional<std::filesystem::path>& file,
                            std::span<const Override> overrides = {});

/// As `load_card_config`, with the config file's text given directly; `source` names it in errors.
CardConfig parse_card_config(std::string_view text, std::string_view source,
                             std::span<const Override> overrides = {});

/// The config as canonical TOML (dotted keys, fixed order, no comments): equal configs give equal
/// text, and parsing the text gives the config back. The name is left out.
std::string canonical_text(const CardConfig& config);

/// The config's digest: xxh64 (seed 0) of its canonical text without the `[fit]` estimates (they
/// change no program and no timing) and without `[system]` and `[link]` (a card's program and
/// timing are the same whatever system it is in), with the line `capabilities.cards = 1` that the
/// card count had before it became `system.cards` (so programs and traces written before keep
/// their digests). Stable across formatting, comments and key order; programs
/// and traces carry it.
std::uint64_t digest(const CardConfig& config);

/// The digest as 16 lower-case hex digits.
std::string digest_hex(const CardConfig& config);

/// The spellings of the config's enums (`open`, `closed`, `e8m0`, `f16`).
std::string_view name(PagePolicy policy);
std::string_view name(SchedulerKind kind);
std::string_view name(ScaleKind kind);
std::string_view name(Topology topology);
std::string_view name(Exchange exchange);

} // namespace cardsim::card
