#include "sim/memory/scheduler_fifo.hpp"

namespace cardsim::sim::memory {

Direction SchedulerFifo::serving() {
    const std::int32_t r = buffer_.oldest(Direction::Read), w = buffer_.oldest(Direction::Write);
    if (r == RequestBuffer::none) return Direction::Write;
    if (w == RequestBuffer::none) return Direction::Read;
    return buffer_[r].seq < buffer_[w].seq ? Direction::Read : Direction::Write;
}

std::int32_t SchedulerFifo::next_request(const BankMachine& bank) const {
    for (const std::int32_t i : buffer_.in_bank(bank.bank)) {
        const QueuedBurst& e = buffer_[i];
        if (e.direction != bank.direction) continue;
        return e.accept <= bank.decision && e.blocker == RequestBuffer::none ? i : RequestBuffer::none;
    }
    return RequestBuffer::none;
}

bool SchedulerFifo::has_further_row_hit(std::uint32_t bank, std::uint32_t row, Direction direction,
                                        std::int32_t except) const {
    for (const std::int32_t i : buffer_.in_bank(bank))
        if (i != except && buffer_[i].direction == direction && buffer_[i].row == row) return true;
    return false;
}

} // namespace cardsim::sim::memory
