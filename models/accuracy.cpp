#include "models/accuracy.hpp"

#include "models/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cardsim::models {
namespace {

/// The larger of an error so far and `e`, NaN once either is (std::max would drop a NaN `e`, and
/// a run of NaN logits would read as a perfect match).
double worst(double so_far, double e) {
    return std::isnan(so_far) || std::isnan(e) ? std::numeric_limits<double>::quiet_NaN()
                                               : std::max(so_far, e);
}

/// Whether every value is finite (an arg-max over a NaN is no answer).
template <class T>
bool finite(const std::vector<T>& v) {
    return std::all_of(v.begin(), v.end(), [](T x) { return std::isfinite(x); });
}

/// Softmax in double.
std::vector<double> softmax(const std::vector<double>& x) {
    double m = *std::max_element(x.begin(), x.end()), s = 0;
    std::vector<double> p(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
        s += p[i] = std::exp(x[i] - m);
    for (auto& v : p)
        v /= s;
    return p;
}

} // namespace

Accuracy accuracy(const Model& model, std::span<const std::vector<float>> logits,
                  const std::vector<std::uint32_t>& tokens, std::size_t prefill_steps,
                  const std::vector<std::size_t>& markers) {
    Accuracy acc;
    std::size_t agree = 0;
    if (std::holds_alternative<DecoderSpec>(model.spec)) {
        DecoderReference ref(model.checkpoint);
        auto session = ref.start();
        // The reference takes the tokens a batch at a time (each matrix read once per batch), with
        // logits only for the generating steps; batches bound the logits held at once.
        constexpr std::size_t batch = 16;
        std::vector<std::vector<double>> batch_logits;
        for (std::size_t s = 0; s < logits.size(); ++s) {
            if (s % batch == 0) {
                const std::size_t n = std::min(batch, logits.size() - s);
                std::vector<std::int64_t> ids(tokens.begin() + std::ptrdiff_t(s),
                                              tokens.begin() + std::ptrdiff_t(s + n));
                batch_logits = session.feed(ids, [&](std::size_t t) { return s + t + 1 >= prefill_steps; });
            }
            if (s + 1 < prefill_steps) continue; // accuracy over the generating steps
            const auto want = std::move(batch_logits[s % batch]);
            const auto& got = logits[s];
            std::vector<double> gd(got.begin(), got.end());
            for (std::size_t i = 0; i < want.size(); ++i)
                acc.max_abs_error = worst(acc.max_abs_error, std::fabs(want[i] - gd[i]));
            auto best = std::size_t(std::max_element(want.begin(), want.end()) - want.begin());
            if (finite(want) && finite(gd) && best == tokens[s + 1 < tokens.size() ? s + 1 : s]) ++agree;
            auto p = softmax(want), q = softmax(gd);
            double kl = 0;
            for (std::size_t i = 0; i < p.size(); ++i)
                if (p[i] > 0) kl += p[i] * (std::log(p[i]) - std::log(std::max(q[i], 1e-300)));
            if (!finite(want) || !finite(gd))
                kl = std::numeric_limits<double>::quiet_NaN(); // no distribution
            acc.kl += kl;
            ++acc.steps;
        }
    } else {
        EncoderReference ref(model.checkpoint);
        std::vector<std::int64_t> toks(tokens.begin(), tokens.end());
        auto want = ref.run(toks, 0, markers);
        const auto& got = logits[0];
        for (std::size_t i = 0; i < want.marker_logits.size() && i < got.size(); ++i)
            acc.max_abs_error = worst(acc.max_abs_error, std::fabs(want.marker_logits[i] - got[i]));
        auto wb = std::max_element(want.marker_logits.begin(), want.marker_logits.end()) -
                  want.marker_logits.begin();
        auto gb = std::max_element(got.begin(), got.end()) - got.begin();
        agree = finite(want.marker_logits) && finite(got) && wb == gb;
        acc.steps = 1;
    }
    acc.top1_agreement = acc.steps ? double(agree) / double(acc.steps) : 0;
    if (acc.steps) acc.kl /= double(acc.steps);
    return acc;
}

} // namespace cardsim::models
