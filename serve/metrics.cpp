#include "serve/metrics.hpp"

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace cardsim::serve {

Percentiles percentiles(std::vector<double> values) {
    Percentiles p;
    p.count = values.size();
    if (values.empty()) return p;
    std::sort(values.begin(), values.end());
    auto rank = [&](double q) {
        auto k = std::size_t(std::ceil(q / 100.0 * double(values.size())));
        return values[std::clamp<std::size_t>(k, 1, values.size()) - 1];
    };
    p.p50 = rank(50);
    p.p90 = rank(90);
    p.p99 = rank(99);
    return p;
}

ServeSummary summarise(const Scheduler& scheduler, std::size_t steps, double busy_seconds, std::size_t rows,
                       std::size_t padded) {
    ServeSummary s;
    s.steps = steps;
    s.busy_seconds = busy_seconds;
    s.rows = rows;
    s.padded_rows = padded;
    s.limit = scheduler.limit();
    std::vector<double> ttft, tpot, e2e;
    double first = std::numeric_limits<double>::infinity(), last = 0;
    for (auto& t : scheduler.times()) {
        ++s.requests;
        if (!t.refused.empty()) {
            if (!s.refused++) s.first_refusal = t.refused;
            continue;
        }
        if (!t.done) continue;
        ++s.served;
        s.output_tokens += t.output_tokens;
        first = std::min(first, t.arrival);
        last = std::max(last, t.finished);
        ttft.push_back(t.ttft());
        if (auto p = t.tpot()) tpot.push_back(*p);
        e2e.push_back(t.e2e());
    }
    if (s.served) {
        s.span_seconds = last - first;
        if (s.span_seconds > 0) {
            s.tokens_per_second = double(s.output_tokens) / s.span_seconds;
            s.utilisation = std::min(1.0, busy_seconds / s.span_seconds);
        }
    }
    s.ttft = percentiles(ttft);
    s.tpot = percentiles(tpot);
    s.e2e = percentiles(e2e);
    return s;
}

namespace {

std::string ms(double seconds) {
    return fmt::format("{:.3f}", seconds * 1e3);
}

std::string line(const char* what, const Percentiles& p) {
    if (!p.count) return fmt::format("{:<5} (none)\n", what);
    return fmt::format("{:<5} p50 {} ms, p90 {} ms, p99 {} ms ({} requests)\n", what, ms(p.p50), ms(p.p90),
                       ms(p.p99), p.count);
}

} // namespace

std::string text(const ServeSummary& s) {
    std::string out = fmt::format("served {} of {} requests ({} output tokens) in {} steps over {:.6f} s\n",
                                  s.served, s.requests, s.output_tokens, s.steps, s.span_seconds);
    if (s.refused) out += fmt::format("refused {}: the first because {}\n", s.refused, s.first_refusal);
    out += fmt::format("throughput: {:.1f} tokens/s; the card ran steps {:.1f} % of the time\n",
                       s.tokens_per_second, 100 * s.utilisation);
    out += line("TTFT", s.ttft) + line("TPOT", s.tpot) + line("e2e", s.e2e);
    out += fmt::format("batch: {}\n", s.limit.text());
    out += fmt::format("rows: {} token rows run, {} of them bucket padding\n", s.rows, s.padded_rows);
    return out;
}

std::string machine(const ServeSummary& s) {
    std::string out;
    auto put = [&](const std::string& k, const std::string& v) { out += k + "=" + v + "\n"; };
    put("requests", std::to_string(s.requests));
    put("served", std::to_string(s.served));
    put("refused", std::to_string(s.refused));
    put("output_tokens", std::to_string(s.output_tokens));
    put("serve_steps", std::to_string(s.steps));
    put("span_seconds", fmt::format("{:.9g}", s.span_seconds));
    put("serve_tokens_per_second", fmt::format("{:.6g}", s.tokens_per_second));
    put("utilisation", fmt::format("{:.6g}", s.utilisation));
    for (auto [name, p] :
         {std::pair{"ttft", &s.ttft}, std::pair{"tpot", &s.tpot}, std::pair{"e2e", &s.e2e}}) {
        put(fmt::format("{}_p50_ms", name), fmt::format("{:.6g}", p->p50 * 1e3));
        put(fmt::format("{}_p90_ms", name), fmt::format("{:.6g}", p->p90 * 1e3));
        put(fmt::format("{}_p99_ms", name), fmt::format("{:.6g}", p->p99 * 1e3));
    }
    put("largest_batch", std::to_string(s.limit.largest));
    put("batch_cap", std::to_string(s.limit.cap));
    put("batch_limit", s.limit.waited ? s.limit.cap_reason : "arrival rate");
    return out;
}

void write_request_table(const std::filesystem::path& path, const std::vector<RequestTimes>& times) {
    std::string out =
        "request,arrival_s,prompt_tokens,output_tokens,slot,admitted_s,first_token_s,finished_s,"
        "ttft_ms,tpot_ms,e2e_ms,generated,refused\n";
    for (std::size_t r = 0; r < times.size(); ++r) {
        auto& t = times[r];
        if (!t.refused.empty()) {
            out += fmt::format("{},{:.9f},{},{},,,,,,,,,\"{}\"\n", r, t.arrival, t.prompt_tokens,
                               t.output_tokens, t.refused);
            continue;
        }
        auto tpot = t.tpot();
        std::string generated;
        for (auto id : t.generated)
            generated += fmt::format("{}{}", generated.empty() ? "" : " ", id);
        out += fmt::format("{},{:.9f},{},{},{},{:.9f},{:.9f},{:.9f},{:.6f},{},{:.6f},{},\n", r, t.arrival,
                           t.prompt_tokens, t.output_tokens, t.slot, t.admitted, t.first_token, t.finished,
                           t.ttft() * 1e3, tpot ? fmt::format("{:.6f}", *tpot * 1e3) : "", t.e2e() * 1e3,
                           generated);
    }
    io::write_file_atomically(path, out);
}

} // namespace cardsim::serve
