#include "sim/system/link.hpp"

namespace cardsim::sim::system {

Link::Link(const sc_core::sc_module_name& name, const card::LinkConfig& config, std::uint32_t from,
           std::uint32_t to, std::uint32_t ports)
    : sc_core::sc_module(name), in("in"), out("out"), config_(config) {
    totals_.from = from;
    totals_.to = to;
    totals_.ports = ports;
    in.register_b_transport(this, &Link::b_transport);
}

void Link::b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
    const std::uint64_t bytes = payload.get_data_length();
    const auto now = sc_core::sc_time_stamp();
    const auto ready = now + delay;
    const auto start = ready > free_at_ ? ready : free_at_;
    // The wire time alone: the link's seconds less its one hop of latency.
    const double wire = config_.seconds(bytes, totals_.ports) - config_.latency_ns * 1e-9;
    free_at_ = start + sc_core::sc_time(wire, sc_core::SC_SEC);
    ++totals_.messages;
    totals_.bytes += bytes;
    totals_.frames += bytes ? (bytes + config_.frame_payload_bytes - 1) / config_.frame_payload_bytes : 0;
    totals_.busy_seconds += wire;
    if (keep_) totals_.sent.push_back({start, free_at_, bytes});
    sc_core::sc_time arrival = free_at_ + sc_core::sc_time(config_.latency_ns, sc_core::SC_NS) - now;
    out->b_transport(payload, arrival);
    delay = free_at_ - now;
}

} // namespace cardsim::sim::system
