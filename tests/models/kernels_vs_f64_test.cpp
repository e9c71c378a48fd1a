// The units' kernels mean what the graph's ops mean: the golden executor (the kernels, on the
// card's numerics) against the f64 graph evaluator, both given the same quantised-then-dequantised
// weights, so that only activation rounding, f32 results and the f16 cache (11 significant bits,
// a relative 2^-11 on every cached value) separate them. A kernel that computed
// something else (a window shifted the wrong way, a gate on the wrong head) would be far off.

#include "engine/card/card_config.hpp"
#include "engine/golden/golden.hpp"
#include "engine/kernels/formats.hpp"
#include "models/graph_eval.hpp"
#include "models/model.hpp"
#include "models/synthetic.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <cmath>
#include <filesystem>
#include <set>

using namespace cardsim;

namespace {

/// A checkpoint whose matrices (the tensors a Gemm or an Embed reads) come back quantised in the
/// card's weight format and dequantised, and whose other tensors come back as they are.
class Dequantised final : public graph::WeightSource {
public:
    Dequantised(const graph::WeightSource& base, const graph::Graph& g, const card::CardConfig& c)
        : base_(base), c_(c) {
        for (auto& op : g.ops) {
            if (auto* m = std::get_if<graph::Gemm>(&op)) packed_.insert(m->w.tensor);
            if (auto* e = std::get_if<graph::Embed>(&op)) packed_.insert(e->table.tensor);
        }
    }
    std::size_t tensor_count() const override { return base_.tensor_count(); }
    const std::string& name(graph::W w) const override { return base_.name(w); }
    std::span<const std::size_t> shape(graph::W w) const override { return base_.shape(w); }
    void read_f32(graph::W w, const graph::View& v, std::span<float> out) const override {
        base_.read_f32(w, v, out);
        if (!packed_.count(w)) return;
        auto s = view_of(w, v);
        auto layout = kernels::matrix_layout(c_, s.rows, s.row_len);
        std::vector<std::byte> bytes(layout.bytes());
        numerics::quantize_into(out, layout, bytes);
        numerics::MatrixView m(layout, bytes);
        for (std::size_t r = 0; r < s.rows; ++r) {
            auto row = m.dequantize_row(r);
            std::copy(row.begin(), row.end(), out.begin() + r * s.row_len);
        }
    }
    void read_f64(graph::W w, const graph::View& v, std::span<double> out) const override {
        std::vector<float> f(out.size());
        read_f32(w, v, f);
        std::copy(f.begin(), f.end(), out.begin());
    }

private:
    const graph::WeightSource& base_;
    card::CardConfig c_;
    std::set<graph::W> packed_;
};

/// The largest |a − b| over the largest |b| (or 1 when b is all small).
double relative_error(const std::vector<float>& a, std::span<const double> b) {
    double err = 0, scale = 1e-3;
    for (std::size_t i = 0; i < b.size(); ++i) {
        err = std::max(err, std::fabs(double(a[i]) - b[i]));
        scale = std::max(scale, std::fabs(b[i]));
    }
    return err / scale;
}

void decoder_agrees(models::SynthArch arch) {
    test::ScratchDir scratch(fmt::format("kernels-{}", models::name(arch)));
    auto dir = scratch / "model";
    models::SynthOptions opt;
    opt.arch = arch;
    opt.seed = 3;
    opt.dtype = models::Dtype::F32;
    models::make_model(opt, dir);
    auto model = models::load_model(dir);
    auto built = models::build_graph(model);
    auto config = card::default_card_config();
    config.numerics.scaling = numerics::ActScaling::PerBlock; // near-exact activations
    Dequantised w(model.checkpoint, built.graph, config);
    golden::Golden gold(built.graph, w, config, graph::Bucket{1, 1, 0}, 8);
    models::GraphEvaluator f64(built, w);
    const std::int64_t tokens[] = {3, 11, 5, 2};
    for (std::uint32_t s = 0; s < 4; ++s) {
        gold.step(graph::BatchInputs{{std::uint32_t(tokens[s])}, {s}, {}, {}, {}, {}, {}, {}});
        models::DecodeRow row{0, tokens[s]};
        auto want = f64.step(std::span(&row, 1));
        double err = relative_error(gold.value(*built.graph.logits), want.logits.row(0));
        INFO(models::name(arch) << " step " << s << ": relative error of the logits " << err);
        REQUIRE(err < 4e-3); // a few f16 roundings; a wrong kernel is off by O(1)
    }
}

} // namespace

TEST_CASE("the kernels compute a dense decoder's graph to within f32 rounding of its f64 meaning") {
    decoder_agrees(models::SynthArch::Dense);
}

TEST_CASE("the kernels compute a hybrid decoder's graph to within f32 rounding of its f64 meaning") {
    decoder_agrees(models::SynthArch::Hybrid);
}
