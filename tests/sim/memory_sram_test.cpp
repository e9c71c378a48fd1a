// The on-chip SRAM: capacity checked on every access and at load, its TLM target's timing.

#include "engine/card/card_config.hpp"
#include "engine/error.hpp"
#include "sim/memory/sram.hpp"

#include <catch2/catch.hpp>

#include <string>

#include <tlm_utils/simple_initiator_socket.h>

#include <vector>

namespace {

using namespace cardsim::sim::memory;

/// Writes `length` bytes of 0x3c at each of `addresses` from its thread and keeps the outcomes.
class Probe : public sc_core::sc_module {
public:
    tlm_utils::simple_initiator_socket<Probe> socket;
    SC_HAS_PROCESS(Probe);
    Probe(const sc_core::sc_module_name& name, std::vector<std::uint64_t> addresses, std::uint32_t length)
        : sc_core::sc_module(name), socket("socket"), addresses_(std::move(addresses)), data(length, 0x3c),
          status(addresses_.size()), delay(addresses_.size()) {
        SC_THREAD(run);
    }
    std::vector<std::uint64_t> addresses_;
    std::vector<unsigned char> data;
    std::vector<tlm::tlm_response_status> status;
    std::vector<sc_core::sc_time> delay;
    tlm::tlm_generic_payload gp;

private:
    void run() {
        for (std::size_t i = 0; i < addresses_.size(); ++i) {
            gp.set_command(tlm::TLM_WRITE_COMMAND);
            gp.set_address(addresses_[i]);
            gp.set_data_ptr(data.data());
            gp.set_data_length(static_cast<unsigned int>(data.size()));
            gp.set_streaming_width(static_cast<unsigned int>(data.size()));
            gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
            delay[i] = sc_core::SC_ZERO_TIME;
            socket->b_transport(gp, delay[i]);
            status[i] = gp.get_response_status();
        }
    }
};

} // namespace

TEST_CASE("an arena larger than the SRAM is refused with both sizes", "[sram]") {
    const auto card = cardsim::card::default_card_config();
    SramStore sram(card.sram.bytes);
    CHECK_NOTHROW(sram.require(card.sram.bytes, "the arena"));
    CHECK_THROWS_WITH(sram.require(card.sram.bytes + 5, "the arena"),
                      Catch::Contains("the arena of " + std::to_string(card.sram.bytes + 5) +
                                      " bytes does not fit the on-chip SRAM of " +
                                      std::to_string(card.sram.bytes) + " bytes"));
}

TEST_CASE("an SRAM access past the capacity is an error naming offset, size and capacity", "[sram]") {
    SramStore sram(1000);
    std::vector<std::byte> buf(16, std::byte{7});
    sram.write(984, buf);
    std::vector<std::byte> back(16);
    sram.read(984, back);
    CHECK(back == buf);
    CHECK_THROWS_WITH(
        sram.write(990, buf),
        Catch::Contains("write of 16 bytes at offset 990 ends at 1006, past the capacity of 1000 bytes"));
    CHECK_THROWS_WITH(sram.read(~std::uint64_t{0} - 4, back),
                      Catch::Contains("past the capacity of 1000 bytes"));
}

TEST_CASE("an SRAM transaction takes latency plus one cycle per port width, and stops at the capacity",
          "[sram][tlm]") {
    const auto card = cardsim::card::default_card_config();
    Sram sram("sram", card.sram, card.clock.kernel_mhz);
    Probe probe("probe", {4096, card.sram.bytes - 4000}, 5000);
    probe.socket.bind(sram.socket);
    sc_core::sc_start();
    CHECK(probe.status[0] == tlm::TLM_OK_RESPONSE);
    const std::uint64_t cycles =
        card.sram.latency + (5000 + card.sram.bytes_per_cycle - 1) / card.sram.bytes_per_cycle;
    CHECK(probe.delay[0] ==
          sc_core::sc_time(1.0e6 / card.clock.kernel_mhz, sc_core::SC_PS) * static_cast<double>(cycles));
    std::vector<std::byte> back(5000);
    sram.store().read(4096, back);
    CHECK(back == std::vector<std::byte>(5000, std::byte{0x3c}));
    CHECK(probe.status[1] == tlm::TLM_ADDRESS_ERROR_RESPONSE);
    CHECK_THAT(sram.describe_error(probe.gp),
               Catch::Contains("write of 5000 bytes at offset " + std::to_string(card.sram.bytes - 4000) +
                               " ends at " + std::to_string(card.sram.bytes + 1000) +
                               ", past the capacity of " + std::to_string(card.sram.bytes) + " bytes"));
}
