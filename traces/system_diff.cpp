#include "traces/system_diff.hpp"

#include "engine/error.hpp"
#include "traces/diff_export.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

namespace cardsim::traces {
namespace {

/// A link as (from, to), the order the reports list links in.
using LinkKey = std::pair<std::uint32_t, std::uint32_t>;

/// A link's ports (from `t`'s header) and totals (over its messages), on side A (`a`) or B.
void add_link_totals(const Trace& t, bool a, std::map<LinkKey, LinkChange>& out) {
    for (auto& l : t.header.links) {
        auto& c = out[{l.from, l.to}];
        c.from = l.from;
        c.to = l.to;
        (a ? c.in_a : c.in_b) = true;
        (a ? c.ports_a : c.ports_b) = l.ports;
    }
    for (auto& m : t.messages) {
        auto& c = out[{m.from, m.to}];
        c.from = m.from;
        c.to = m.to;
        (a ? c.messages_a : c.messages_b) += 1;
        (a ? c.bytes_a : c.bytes_b) += m.bytes;
        (a ? c.busy_a : c.busy_b) += m.duration();
    }
}

/// `t`'s messages by link, each link's in the trace's order.
std::map<LinkKey, std::vector<Message>> messages_by_link(const Trace& t) {
    std::map<LinkKey, std::vector<Message>> out;
    for (auto& m : t.messages)
        out[{m.from, m.to}].push_back(m);
    return out;
}

/// Compares a link's messages by place, the k-th of `a` against the k-th of `b` (START and END
/// within `pct` by the rule of `deviates`, BYTES exactly; a message of one side only differs), and
/// records in `l` how many differ and the first that does.
void compare_messages(LinkChange& l, const std::vector<Message>& a, const std::vector<Message>& b,
                      double pct) {
    for (std::size_t k = 0; k < std::max(a.size(), b.size()); ++k) {
        MessageChange m;
        m.index = k;
        if (k < a.size()) m.a = a[k];
        if (k < b.size()) m.b = b[k];
        if (m.a && m.b) {
            m.start_over = deviates(m.a->start, m.b->start, pct);
            m.end_over = deviates(m.a->end, m.b->end, pct);
            m.bytes_over = m.a->bytes != m.b->bytes;
        } else
            m.start_over = m.end_over = m.bytes_over = true;
        if (!m.start_over && !m.end_over && !m.bytes_over) continue;
        if (++l.messages_differing == 1) l.first_message = m;
    }
}

/// A link's name as the reports spell it.
std::string link_name(const LinkChange& l) {
    return fmt::format("link {} -> {}", l.from, l.to);
}

/// A side's ports as the reports spell them: the number, or `-` when that side does not list the link.
std::string ports_text(bool listed, std::uint32_t ports) {
    return listed ? std::to_string(ports) : std::string("-");
}

/// One side's message as the text report spells it (`start 715 end 811 bytes 3072`, or `none`).
std::string message_text(const std::optional<Message>& m) {
    return m ? fmt::format("start {} end {} bytes {}", m->start, m->end, m->bytes) : std::string("none");
}

/// Which values of a differing message differ, as the reports name them (`start, end`, `only in A`).
std::string message_fields(const MessageChange& m) {
    if (!m.a) return "only in B";
    if (!m.b) return "only in A";
    std::string out;
    for (auto [over, name] : {std::pair{m.start_over, "start"}, {m.end_over, "end"}, {m.bytes_over, "bytes"}})
        if (over) out += fmt::format("{}{}", out.empty() ? "" : ", ", name);
    return out;
}

/// The line of the text report for a link whose messages differ: how many, and the first on both
/// sides (`link 0 -> 1: 3 of 45 messages differ; the first, message 7 (start, end): A start ...`).
std::string messages_line(const LinkChange& l) {
    const auto& m = *l.first_message;
    return fmt::format("  {}: {} of {} messages differ; the first, message {} ({}): A {}, B {}\n",
                       link_name(l), l.messages_differing, std::max(l.messages_a, l.messages_b), m.index,
                       message_fields(m), message_text(m.a), message_text(m.b));
}

} // namespace

bool LinkChange::differs(double pct) const {
    return in_a != in_b || ports_a != ports_b || messages_a != messages_b || bytes_a != bytes_b ||
           deviates(busy_a, busy_b, pct) || messages_differing > 0;
}

std::string LinkChange::what(double pct) const {
    std::string out;
    auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
    if (in_a != in_b) add(in_a ? "only in A" : "only in B");
    if (in_a && in_b && ports_a != ports_b) add(fmt::format("ports {} -> {}", ports_a, ports_b));
    if (messages_a != messages_b) add(fmt::format("messages {} -> {}", messages_a, messages_b));
    if (bytes_a != bytes_b) add(fmt::format("bytes {} -> {}", bytes_a, bytes_b));
    if (deviates(busy_a, busy_b, pct)) add(fmt::format("busy cycles {}", change(busy_a, busy_b)));
    if (messages_differing > 0)
        add(fmt::format("{} of {} messages from message {}", messages_differing,
                        std::max(messages_a, messages_b), first_message->index));
    return out;
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
            why += fmt::format("{}{} differs ({})", why.empty() ? "" : "; ", link_name(l),
                               l.what(cycles_tol_pct));
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
    std::map<LinkKey, LinkChange> links;
    add_link_totals(a, true, links);
    add_link_totals(b, false, links);
    auto messages_a = messages_by_link(a), messages_b = messages_by_link(b);
    const std::vector<Message> none;
    auto of = [&](const std::map<LinkKey, std::vector<Message>>& m, const LinkKey& key) -> auto& {
        auto it = m.find(key);
        return it == m.end() ? none : it->second;
    };
    for (auto& [key, l] : links) {
        compare_messages(l, of(messages_a, key), of(messages_b, key), options.cycles_tol_pct);
        r.links.push_back(l);
    }
    return r;
}

std::string to_text(const SystemDiffReport& r, std::string_view name_a, std::string_view name_b) {
    std::string out = r.verdict() + "\n";
    out += fmt::format("A: {}, B: {}: systems of {} cards, compared card by card\n", name_a, name_b,
                       r.cards.size());
    if (!r.links.empty()) {
        out += fmt::format("  {:<14} {:>7} {:>7} {:>10} {:>10} {:>12} {:>12} {:>12} {:>12} {:>18}\n", "link",
                           "ports A", "ports B", "messages A", "messages B", "bytes A", "bytes B", "busy A",
                           "busy B", "change");
        for (auto& l : r.links)
            out += fmt::format("  {:<14} {:>7} {:>7} {:>10} {:>10} {:>12} {:>12} {:>12} {:>12} {:>18}{}\n",
                               fmt::format("{} -> {}", l.from, l.to), ports_text(l.in_a, l.ports_a),
                               ports_text(l.in_b, l.ports_b), l.messages_a, l.messages_b, l.bytes_a,
                               l.bytes_b, l.busy_a, l.busy_b, change(l.busy_a, l.busy_b),
                               !l.in_a                       ? " (only in B)"
                               : !l.in_b                     ? " (only in A)"
                               : l.differs(r.cycles_tol_pct) ? " differs"
                                                             : "");
        for (auto& l : r.links)
            if (l.first_message) out += messages_line(l);
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
    auto ports = [](bool listed, std::uint32_t p) { return listed ? json::value(p) : json::value(nullptr); };
    auto side = [](const std::optional<Message>& m, auto field) {
        return m ? json::value((*m).*field) : json::value(nullptr);
    };
    for (auto& l : r.links) {
        json::value first = nullptr;
        if (auto& m = l.first_message)
            first = json::object{{"index", m->index},
                                 {"start_a", side(m->a, &Message::start)},
                                 {"end_a", side(m->a, &Message::end)},
                                 {"bytes_a", side(m->a, &Message::bytes)},
                                 {"start_b", side(m->b, &Message::start)},
                                 {"end_b", side(m->b, &Message::end)},
                                 {"bytes_b", side(m->b, &Message::bytes)},
                                 {"start_over", m->start_over},
                                 {"end_over", m->end_over},
                                 {"bytes_over", m->bytes_over}};
        links.push_back(json::object{{"from", l.from},
                                     {"to", l.to},
                                     {"in_a", l.in_a},
                                     {"in_b", l.in_b},
                                     {"ports_a", ports(l.in_a, l.ports_a)},
                                     {"ports_b", ports(l.in_b, l.ports_b)},
                                     {"messages_a", l.messages_a},
                                     {"messages_b", l.messages_b},
                                     {"bytes_a", l.bytes_a},
                                     {"bytes_b", l.bytes_b},
                                     {"busy_a", l.busy_a},
                                     {"busy_b", l.busy_b},
                                     {"messages_differing", l.messages_differing},
                                     {"first_message", std::move(first)},
                                     {"differs", l.differs(r.cycles_tol_pct)}});
    }
    o["links"] = std::move(links);
    json::array cards;
    for (std::size_t k = 0; k < r.cards.size(); ++k)
        cards.push_back(diff_json(r.cards[k], fmt::format("{} card {}", name_a, k),
                                  fmt::format("{} card {}", name_b, k)));
    o["cards"] = std::move(cards);
    return json::serialize(o) + "\n";
}

std::string to_csv(const SystemDiffReport& r, std::string_view name_a, std::string_view name_b) {
    // The system's verdict first (no card: a reader that takes the first verdict row gets the
    // whole comparison's, links included), then each card's rows, then the links'.
    std::string out = "card,section,item,field,a,b,delta,pct,over,unit,opcode,phase,pc,layer,detail\n";
    out += fmt::format(",verdict,,,{},{},,,{},,,,,,{}\n", csv_field(name_a), csv_field(name_b),
                       r.agree() ? "0" : "1", csv_field(r.verdict()));
    for (std::size_t k = 0; k < r.cards.size(); ++k) {
        auto text = to_csv(r.cards[k], name_a, name_b);
        std::size_t at = 0;
        bool header = true;
        for (auto nl = text.find('\n'); nl != std::string::npos; at = nl + 1, nl = text.find('\n', at)) {
            if (!header) out += fmt::format("{},{}\n", k, text.substr(at, nl - at));
            header = false;
        }
    }
    for (auto& l : r.links) {
        const auto over = l.differs(r.cycles_tol_pct) ? "1" : "0";
        // A value on each side (none where that side lacks it), the delta and per cent when both have one.
        auto row = [&](std::string_view field, std::optional<std::uint64_t> a, std::optional<std::uint64_t> b,
                       std::string_view detail = {}) {
            std::string delta, pct;
            if (a && b) {
                const auto d = static_cast<long long>(*b) - static_cast<long long>(*a);
                delta = std::to_string(d);
                if (*a) pct = fmt::format("{:.4f}", 100.0 * double(d) / double(*a));
            }
            auto text = [](std::optional<std::uint64_t> v) { return v ? std::to_string(*v) : std::string(); };
            out += fmt::format(",link,{}->{},{},{},{},{},{},{},,,,,,{}\n", l.from, l.to, field, text(a),
                               text(b), delta, pct, over, detail);
        };
        auto ports = [](bool listed, std::uint32_t p) {
            return listed ? std::optional<std::uint64_t>(p) : std::nullopt;
        };
        row("ports", ports(l.in_a, l.ports_a), ports(l.in_b, l.ports_b));
        row("messages", l.messages_a, l.messages_b);
        row("bytes", l.bytes_a, l.bytes_b);
        row("busy_cycles", l.busy_a, l.busy_b);
        if (auto& m = l.first_message) {
            const auto detail = fmt::format("{} of {} messages differ; the first: {}", l.messages_differing,
                                            std::max(l.messages_a, l.messages_b), message_fields(*m));
            auto value = [](const std::optional<Message>& x, std::uint64_t Message::*field) {
                return x ? std::optional<std::uint64_t>((*x).*field) : std::nullopt;
            };
            for (auto [name, field] :
                 {std::pair{"start", &Message::start}, {"end", &Message::end}, {"bytes", &Message::bytes}})
                row(fmt::format("message[{}].{}", m->index, name), value(m->a, field), value(m->b, field),
                    csv_field(detail));
        }
    }
    return out;
}

} // namespace cardsim::traces
