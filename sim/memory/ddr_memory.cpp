#include "sim/memory/ddr_memory.hpp"

#include "engine/error.hpp"
#include "sim/memory/stall_extension.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>

namespace cardsim::sim::memory {

DdrMemory::DdrMemory(const sc_core::sc_module_name& name, const card::DdrConfig& ddr,
                     std::uint64_t data_bytes)
    : sc_core::sc_module(name), socket("socket"), to_channel_("to_channel"),
      interleave_(ddr.channels, ddr.interleave_bytes, ddr.channel_bytes()),
      data_size_(std::min(data_bytes, interleave_.total_bytes())), store_(data_size_), ranges_(ddr.channels),
      finished_at_(ddr.channels), acts_at_(ddr.channels) {
    for (std::uint32_t i = 0; i < ddr.channels; ++i) {
        channels_.push_back(std::make_unique<DdrChannel>(fmt::format("channel_{}", i).c_str(), ddr));
        to_channel_.bind(channels_.back()->socket);
    }
    socket.register_b_transport(this, &DdrMemory::b_transport);
    socket.register_transport_dbg(this, &DdrMemory::transport_dbg);
    socket.register_get_direct_mem_ptr(this, &DdrMemory::get_direct_mem_ptr);
}

Cycle DdrMemory::flush() {
    stale_ = ~std::uint64_t{0};
    Cycle end = 0;
    for (auto& c : channels_)
        end = std::max(end, c->controller().flush());
    return end;
}

void DdrMemory::set_user_port(const PortLane& lane) {
    stale_ = ~std::uint64_t{0};
    for (auto& c : channels_)
        c->controller().set_port(lane, lane);
}

void DdrMemory::reset(Cycle origin) {
    stale_ = ~std::uint64_t{0};
    for (auto& c : channels_)
        c->controller().reset(origin);
    tickets_.clear();
    free_tickets_.clear();
}

tlm::tlm_response_status DdrMemory::submit(const MemRequest& request, Cycle arrival, std::uint64_t tag) {
    const std::uint64_t address = request.address, length = request.length;
    if (address > size() || length > size() - address) return tlm::TLM_ADDRESS_ERROR_RESPONSE;
    if (observer_) observer_->observe({address, request.length, request.direction, clock().ps_of(arrival)});
    // A request in one channel goes there under its own tag (odd); one split over channels under
    // a ticket (even) that collects its parts.
    if (length == 0) {
        stale_ |= 1;
        channels_[0]->controller().submit(request.direction, 0, 0, arrival, tag << 1 | 1);
        return tlm::TLM_OK_RESPONSE;
    }
    if (interleave_.single(address, length)) {
        const auto at = interleave_.locate(address);
        stale_ |= at.channel < 64 ? std::uint64_t{1} << at.channel : ~std::uint64_t{0};
        channels_[at.channel]->controller().submit(request.direction, at.local, length, arrival,
                                                   tag << 1 | 1);
        return tlm::TLM_OK_RESPONSE;
    }
    std::uint32_t t;
    if (free_tickets_.empty()) {
        t = static_cast<std::uint32_t>(tickets_.size());
        tickets_.emplace_back();
    } else {
        t = free_tickets_.back();
        free_tickets_.pop_back();
    }
    tickets_[t] = Ticket{tag, arrival, arrival, {}, 0};
    stale_ = ~std::uint64_t{0};
    interleave_.split(address, length, ranges_);
    for (const auto& r : ranges_)
        if (!r.empty()) ++tickets_[t].parts;
    for (std::uint32_t c = 0; c < channels(); ++c)
        if (!ranges_[c].empty())
            channels_[c]->controller().submit(request.direction, ranges_[c].begin, ranges_[c].size(), arrival,
                                              std::uint64_t{t} << 1);
    return tlm::TLM_OK_RESPONSE;
}

bool DdrMemory::merge(const ChannelCompletion& part, MemCompletion& out) {
    if (part.tag & 1) {
        out = {part.tag >> 1, part.arrival, part.done, part.split};
        return true;
    }
    Ticket& t = tickets_[part.tag >> 1];
    if (part.done >= t.done) {
        t.done = part.done;
        t.split = part.split;
    }
    if (--t.parts > 0) return false;
    out = {t.tag, t.arrival, t.done, t.split};
    free_tickets_.push_back(static_cast<std::uint32_t>(part.tag >> 1));
    return true;
}

bool DdrMemory::next_completion(MemCompletion& out) {
    constexpr Cycle never = ChannelController::never;
    // Each channel's earliest completion and next action, kept from the last call for the
    // channels nothing reached since, and then read again only for the channel that acted (the
    // others' do not change).
    const std::uint32_t n = channels();
    const auto reread = [&](std::uint32_t c) {
        ChannelController& ctl = channels_[c]->controller();
        finished_at_[c] = ctl.earliest_finished();
        acts_at_[c] = ctl.next_event();
    };
    // The stale channels by their bits (mostly the one just submitted to): no branch per channel
    // on which one it was.
    const std::uint64_t present = n >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1;
    for (std::uint64_t m = stale_ & present; m != 0; m &= m - 1)
        reread(static_cast<std::uint32_t>(std::countr_zero(m)));
    for (std::uint32_t c = 64; c < n; ++c) // beyond the bits: always read again
        reread(c);
    stale_ = 0;
    for (;;) {
        // The earliest completion is final once no channel can act before it: every later action
        // (a column command or a refresh) completes a request no earlier than it happens.
        Cycle done = never, event = never;
        std::uint32_t done_at = 0, event_at = 0;
        for (std::uint32_t c = 0; c < n; ++c) {
            if (finished_at_[c] < done) {
                done = finished_at_[c];
                done_at = c;
            }
            if (acts_at_[c] < event) {
                event = acts_at_[c];
                event_at = c;
            }
        }
        std::uint32_t acted;
        if (done != never && done <= event) {
            acted = done_at;
            ChannelController& ctl = channels_[acted]->controller();
            const bool whole = merge(ctl.take_finished(), out);
            finished_at_[acted] = ctl.earliest_finished();
            if (whole) return true;
            continue;
        }
        if (event == never) return false;
        acted = event_at;
        ChannelController& ctl = channels_[acted]->controller();
        ctl.step(done);
        finished_at_[acted] = ctl.earliest_finished();
        acts_at_[acted] = ctl.next_event();
    }
}

bool DdrMemory::take_served(MemCompletion& out) {
    stale_ = ~std::uint64_t{0};
    for (auto& ch : channels_) {
        ChannelController& ctl = ch->controller();
        while (ctl.earliest_finished() != ChannelController::never)
            if (merge(ctl.take_finished(), out)) return true;
    }
    return false;
}

void DdrMemory::load(std::uint64_t address, std::span<const std::byte> bytes) {
    if (address > size() || bytes.size() > size() - address)
        throw Error(fmt::format("DDR image: {} bytes at 0x{:x} run past the end of the {} bytes of DDR",
                                bytes.size(), address, size()));
    if (address > data_size_ || bytes.size() > data_size_ - address)
        throw Error(fmt::format("DDR image: {} bytes at 0x{:x} run past the {} bytes of DDR the program's "
                                "regions span",
                                bytes.size(), address, data_size_));
    write_data(address, bytes);
}

void DdrMemory::lend(std::uint64_t address, std::span<const std::byte> bytes,
                     std::shared_ptr<const void> owner) {
    if (address > data_size_ || bytes.size() > data_size_ - address)
        throw Error(fmt::format("DDR image: {} bytes at 0x{:x} run past the {} bytes of DDR the program's "
                                "regions span",
                                bytes.size(), address, data_size_));
    if (lent_) end_loan();
    if (bytes.empty()) return;
    lent_ = Lent{address, bytes, std::move(owner)};
    invalidate_grants(); // grants made before now cover the range as the store's
}

void DdrMemory::invalidate_grants() {
    if (!granted_) return; // none yet (nor, before elaboration ends, anyone to tell)
    granted_ = false;
    for (std::size_t i = 0; i < socket.size(); ++i)
        socket[static_cast<int>(i)]->invalidate_direct_mem_ptr(0, ~sc_dt::uint64{0});
}

void DdrMemory::end_loan() {
    if (!lent_) return;
    const Lent was = std::move(*lent_);
    lent_.reset();
    store_.prepare(was.address, was.bytes.size());
    store_.write(was.address, was.bytes);
    invalidate_grants();
}

void DdrMemory::read_data(std::uint64_t address, std::span<std::byte> out) const {
    if (!lent_ || !lent_->overlaps(address, out.size())) {
        store_.read(address, out);
        return;
    }
    const std::uint64_t first = std::max(address, lent_->address),
                        end = std::min(address + out.size(), lent_->address + lent_->bytes.size());
    if (first > address) store_.read(address, out.first(first - address));
    std::copy_n(lent_->bytes.begin() + static_cast<std::ptrdiff_t>(first - lent_->address), end - first,
                out.begin() + static_cast<std::ptrdiff_t>(first - address));
    if (end < address + out.size()) store_.read(end, out.subspan(end - address));
}

void DdrMemory::write_data(std::uint64_t address, std::span<const std::byte> in) {
    if (lent_ && lent_->overlaps(address, in.size())) end_loan();
    store_.write(address, in);
}

void DdrMemory::prepare(std::uint64_t address, std::uint64_t length) {
    if (address > data_size_ || length > data_size_ - address)
        throw Error(fmt::format("DDR image: {} bytes at 0x{:x} run past the {} bytes of DDR the program's "
                                "regions span",
                                length, address, data_size_));
    store_.prepare(address, length);
}

void DdrMemory::peek(std::uint64_t address, std::span<std::byte> bytes) const {
    if (address > size() || bytes.size() > size() - address)
        throw Error(fmt::format("DDR read: {} bytes at 0x{:x} run past the end of the {} bytes of DDR",
                                bytes.size(), address, size()));
    if (address > data_size_ || bytes.size() > data_size_ - address)
        throw Error(fmt::format("DDR read: {} bytes at 0x{:x} run past the {} bytes of DDR the program's "
                                "regions span",
                                bytes.size(), address, data_size_));
    read_data(address, bytes);
}

std::string DdrMemory::describe_error(const tlm::tlm_generic_payload& gp) const {
    const char* what = gp.is_read() ? "read" : "write";
    const std::uint64_t a = gp.get_address();
    const std::uint64_t n = gp.get_data_length();
    switch (gp.get_response_status()) {
    case tlm::TLM_ADDRESS_ERROR_RESPONSE:
        return fmt::format("DDR {} of {} bytes at 0x{:x} lies outside the DDR region [0, 0x{:x})", what, n, a,
                           size());
    case tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE:
        return fmt::format("DDR {} at 0x{:x} uses byte enables, which the DDR model does not take", what, a);
    case tlm::TLM_BURST_ERROR_RESPONSE:
        return fmt::format("DDR {} at 0x{:x} has a streaming width below its length {}", what, a, n);
    default:
        return fmt::format("DDR {} of {} bytes at 0x{:x} failed: {}", what, n, a, gp.get_response_string());
    }
}

void DdrMemory::b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    stale_ = ~std::uint64_t{0};
    const tlm::tlm_command cmd = gp.get_command();
    const std::uint64_t address = gp.get_address();
    const std::uint64_t length = gp.get_data_length();
    if (cmd == tlm::TLM_IGNORE_COMMAND || length == 0) {
        gp.set_response_status(tlm::TLM_OK_RESPONSE);
        return;
    }
    if (address > size() || length > size() - address) {
        gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    if (gp.get_byte_enable_ptr()) {
        gp.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
        return;
    }
    if (gp.get_streaming_width() < length) {
        gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
        return;
    }
    if (observer_) { // the arrival as the channels see it: the memory-clock edge at or after it
        const TimeBase& tb = channels_[0]->time_base();
        const Cycle arrival = tb.cycle_at_or_after(sc_core::sc_time_stamp() + delay);
        observer_->observe({address, static_cast<std::uint32_t>(length),
                            cmd == tlm::TLM_READ_COMMAND ? Direction::Read : Direction::Write,
                            tb.clock().ps_of(arrival)});
    }
    if (unsigned char* data = gp.get_data_ptr()) {
        if (address > data_size_ || length > data_size_ - address) {
            gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return;
        }
        auto bytes = reinterpret_cast<std::byte*>(data);
        if (cmd == tlm::TLM_READ_COMMAND)
            read_data(address, {bytes, length});
        else
            write_data(address, {bytes, length});
    }
    if (interleave_.single(address, length)) { // one channel: forward, timing only, with a local address
        const auto at = interleave_.locate(address);
        unsigned char* data = gp.get_data_ptr();
        gp.set_address(at.local);
        gp.set_data_ptr(nullptr);
        to_channel_[at.channel]->b_transport(gp, delay);
        gp.set_address(address);
        gp.set_data_ptr(data);
        if (auto* stalls = gp.get_extension<StallExtension>()) {
            stalls->channel = at.channel;
            stalls->channels = std::uint64_t{1} << at.channel;
        }
        return;
    }
    interleave_.split(address, length, ranges_);
    sc_core::sc_time done = delay;
    // The stall split of the part that completes last (ties: the lower channel).
    auto* stalls = gp.get_extension<StallExtension>();
    StallExtension part_stalls;
    if (stalls) part_.set_extension(&part_stalls);
    bool first_part = true;
    std::uint64_t reached = 0;
    for (std::uint32_t c = 0; c < channels(); ++c) {
        const auto& r = ranges_[c];
        if (r.empty()) continue;
        part_.set_command(cmd);
        part_.set_address(r.begin);
        part_.set_data_ptr(nullptr);
        part_.set_data_length(static_cast<unsigned int>(r.size()));
        part_.set_streaming_width(static_cast<unsigned int>(r.size()));
        part_.set_byte_enable_ptr(nullptr);
        part_.set_byte_enable_length(0);
        part_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        sc_core::sc_time d = delay;
        to_channel_[c]->b_transport(part_, d);
        if (part_.is_response_error()) {
            gp.set_response_status(part_.get_response_status());
            if (stalls) part_.clear_extension(&part_stalls);
            return;
        }
        if (stalls && (first_part || d > done)) {
            stalls->split = part_stalls.split;
            stalls->arrival = part_stalls.arrival;
            stalls->channel = c;
        }
        reached |= std::uint64_t{1} << c;
        first_part = false;
        done = std::max(done, d);
    }
    if (stalls) {
        part_.clear_extension(&part_stalls);
        stalls->channels = reached;
    }
    delay = done;
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

unsigned int DdrMemory::transport_dbg(int, tlm::tlm_generic_payload& gp) {
    const std::uint64_t a = gp.get_address();
    if (a >= data_size_ || !gp.get_data_ptr()) return 0;
    const std::uint64_t n = std::min<std::uint64_t>(gp.get_data_length(), data_size_ - a);
    auto bytes = reinterpret_cast<std::byte*>(gp.get_data_ptr());
    if (gp.get_command() == tlm::TLM_READ_COMMAND)
        peek(a, {bytes, n});
    else if (gp.get_command() == tlm::TLM_WRITE_COMMAND)
        load(a, {bytes, n});
    else
        return 0;
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
    return static_cast<unsigned int>(n);
}

bool DdrMemory::get_direct_mem_ptr(int, tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi) {
    if (data_size_ == 0) return false;
    std::uint64_t first = 0, last = data_size_ - 1; // the grant: the whole data, read and write
    if (lent_) {
        const std::uint64_t a = gp.get_address(), n = std::max<std::uint64_t>(gp.get_data_length(), 1);
        const std::uint64_t lent_end = lent_->address + lent_->bytes.size();
        const bool inside = a >= lent_->address && a < lent_end && n <= lent_end - a;
        if (lent_->overlaps(a, n) && (!inside || gp.is_write())) {
            end_loan(); // written, or read across its edge: the store holds it all from now on
        } else if (inside) {
            // Read in place: the bytes are the owner's and a DMI pointer is not const.
            dmi.set_dmi_ptr(reinterpret_cast<unsigned char*>(const_cast<std::byte*>(lent_->bytes.data())));
            dmi.set_start_address(lent_->address);
            dmi.set_end_address(lent_end - 1);
            dmi.allow_read();
            dmi.set_read_latency(sc_core::SC_ZERO_TIME);
            dmi.set_write_latency(sc_core::SC_ZERO_TIME);
            granted_ = true;
            return true;
        } else if (a < lent_->address) {
            last = lent_->address - 1;
        } else {
            first = lent_end;
        }
    }
    if (first > last) return false;
    dmi.set_dmi_ptr(reinterpret_cast<unsigned char*>(store_.base() + first));
    dmi.set_start_address(first);
    dmi.set_end_address(last);
    dmi.allow_read_write();
    granted_ = true;
    dmi.set_read_latency(sc_core::SC_ZERO_TIME); // timing comes from the data-less transactions
    dmi.set_write_latency(sc_core::SC_ZERO_TIME);
    return true;
}

} // namespace cardsim::sim::memory
