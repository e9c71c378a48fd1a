#include "traces/system_diff.hpp"

#include "engine/error.hpp"
#include "traces/diff_export.hpp"

#include <fmt/core.h>

#include <map>
#include <utility>

namespace cardsim::traces {
namespace {

/// A link's totals over `t`'s messages.
void add_link_totals(const Trace& t, bool a,
                     std::map<std::pair<std::uint32_t, std::uint32_t>, LinkChange>& out) {
    for (auto& l : t.header.links) {
        auto& c = out[{l.from, l.to}];
        c.from = l.from;
        c.to = l.to;
        (a ? c.in_a : c.in_b) = true;
    }
    for (auto& m : t.messages) {
        auto& c = out[{m.from, m.to}];
        (a ? c.messages_a : c.messages_b) += 1;
        (a ? c.bytes_a : c.bytes_b) += m.bytes;
        (a ? c.busy_a : c.busy_b) += m.duration();
    }
}

/// A link's name as the reports spell it.
std::string link_name(const LinkChange& l) {
    return fmt::format("link {} -> {}", l.from, l.to);
}

} // namespace

bool LinkChange::differs(double pct) const {
    return in_a != in_b || messages_a != messages_b || bytes_a != bytes_b || deviates(busy_a, busy_b, pct);
}

bool SystemDiffReport::agree() const {
    for (auto& c : cards)
        if (!c.agree()) return false;
    for (auto& l : links)
        if (l.differs(cycles_tol_pct)) return false;
    return true;
}

std::string SystemDiffReport::verdict() const {
    std::string why;
    for (std::size_t k = 0; k < cards.size(); ++k)
        if (!cards[k].agree()) {
            auto v = cards[k].verdict();
            auto colon = v.find(": ");
            why += fmt::format("{}card {}: {}", why.empty() ? "" : "; ", k,
                               colon == std::string::npos ? v : v.substr(colon + 2));
        }
    for (auto& l : links)
        if (l.differs(cycles_tol_pct))
            why += fmt::format("{}{} differs", why.empty() ? "" : "; ", link_name(l));
    if (why.empty())
        return fmt::format("traces agree: {} cards, each within the tolerance, and {} links", cards.size(),
                           links.size());
    return "traces differ: " + why;
}

bool is_system(const Trace& a, const Trace& b) {
    return !a.header.cards.empty() || !b.header.cards.empty();
}

SystemDiffReport diff_system(const Trace& a, const Trace& b, const DiffOptions& options) {
    const auto na = card_count(a.header), nb = card_count(b.header);
    auto what = [](std::uint32_t n) {
        return n == 1 ? std::string("a trace of one card") : fmt::format("a system of {} cards", n);
    };
    if (na != nb)
        throw Error(fmt::format("A is {} and B {}: trace diff compares a system with a system of as many "
                                "cards, card by card (their commands are other programs); `trace show` "
                                "gives each one's totals",
                                what(na), what(nb)));
    if (na < 2) throw Error("trace diff of systems: neither trace is of a system of cards");
    SystemDiffReport r;
    r.cycles_tol_pct = options.cycles_tol_pct;
    for (std::uint32_t k = 0; k < na; ++k) {
        auto ta = card_trace(a, k), tb = card_trace(b, k);
        auto o = options;
        if (o.sites && o.sites->program != ta.header.program && o.sites->program != tb.header.program)
            o.sites.reset(); // the program is another card's
        r.cards.push_back(diff(ta, tb, o));
    }
    std::map<std::pair<std::uint32_t, std::uint32_t>, LinkChange> links;
    add_link_totals(a, true, links);
    add_link_totals(b, false, links);
    for (auto& [key, l] : links)
        r.links.push_back(l);
    return r;
}

std::string to_text(const SystemDiffReport& r, std::string_view name_a, std::string_view name_b) {
    std::string out = r.verdict() + "\n";
    out += fmt::format("A: {}, B: {}: systems of {} cards, compared card by card\n", name_a, name_b,
                       r.cards.size());
    if (!r.links.empty()) {
        out += fmt::format("  {:<14} {:>10} {:>10} {:>12} {:>12} {:>12} {:>12} {:>18}\n", "link",
                           "messages A", "messages B", "bytes A", "bytes B", "busy A", "busy B", "change");
        for (auto& l : r.links)
            out += fmt::format("  {:<14} {:>10} {:>10} {:>12} {:>12} {:>12} {:>12} {:>18}{}\n",
                               fmt::format("{} -> {}", l.from, l.to), l.messages_a, l.messages_b, l.bytes_a,
                               l.bytes_b, l.busy_a, l.busy_b, change(l.busy_a, l.busy_b),
                               !l.in_a                       ? " (only in B)"
                               : !l.in_b                     ? " (only in A)"
                               : l.differs(r.cycles_tol_pct) ? " differs"
                                                             : "");
    }
    for (std::size_t k = 0; k < r.cards.size(); ++k)
        out += fmt::format(
            "\ncard {}: {}", k,
            to_text(r.cards[k], fmt::format("{} card {}", name_a, k), fmt::format("{} card {}", name_b, k)));
    return out;
}

std::string to_json(const SystemDiffReport& r, std::string_view name_a, std::string_view name_b) {
    namespace json = boost::json;
    json::object o;
    o["format"] = "cardsim-trace-diff-system";
    o["version"] = 1;
    o["agree"] = r.agree();
    o["verdict"] = r.verdict();
    json::array links;
    for (auto& l : r.links)
        links.push_back(json::object{{"from", l.from},
                                     {"to", l.to},
                                     {"in_a", l.in_a},
                                     {"in_b", l.in_b},
                                     {"messages_a", l.messages_a},
                                     {"messages_b", l.messages_b},
                                     {"bytes_a", l.bytes_a},
                                     {"bytes_b", l.bytes_b},
                                     {"busy_a", l.busy_a},
                                     {"busy_b", l.busy_b},
                                     {"differs", l.differs(r.cycles_tol_pct)}});
    o["links"] = std::move(links);
    json::array cards;
    for (std::size_t k = 0; k < r.cards.size(); ++k)
        cards.push_back(diff_json(r.cards[k], fmt::format("{} card {}", name_a, k),
                                  fmt::format("{} card {}", name_b, k)));
    o["cards"] = std::move(cards);
    return json::serialize(o) + "\n";
}

std::string to_csv(const SystemDiffReport& r, std::string_view name_a, std::string_view name_b) {
    std::string out;
    for (std::size_t k = 0; k < r.cards.size(); ++k) {
        auto text = to_csv(r.cards[k], name_a, name_b);
        std::size_t at = 0;
        bool header = true;
        for (auto nl = text.find('\n'); nl != std::string::npos; at = nl + 1, nl = text.find('\n', at)) {
            if (header && k == 0) out += "card," + text.substr(at, nl - at) + "\n";
            if (!header) out += fmt::format("{},{}\n", k, text.substr(at, nl - at));
            header = false;
        }
    }
    if (out.empty()) out = "card,section,item,field,a,b,delta,pct,over,unit,opcode,phase,pc,layer,detail\n";
    for (auto& l : r.links) {
        const auto over = l.differs(r.cycles_tol_pct) ? "1" : "0";
        auto row = [&](std::string_view field, std::uint64_t a, std::uint64_t b) {
            const auto delta = static_cast<long long>(b) - static_cast<long long>(a);
            const auto pct = a ? fmt::format("{:.4f}", 100.0 * double(delta) / double(a)) : std::string();
            out += fmt::format(",link,{}->{},{},{},{},{},{},{},,,,,,\n", l.from, l.to, field, a, b, delta,
                               pct, over);
        };
        row("messages", l.messages_a, l.messages_b);
        row("bytes", l.bytes_a, l.bytes_b);
        row("busy_cycles", l.busy_a, l.busy_b);
    }
    return out;
}

} // namespace cardsim::traces
