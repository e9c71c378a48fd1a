// The f64 reference's matrix products: a matrix read from the checkpoint and multiplied by up to
// nine vectors at once (the AVX2 path, its rows in groups) gives each vector the bits the plain
// scalar sum gives it alone.

#include "models/checkpoint.hpp"
#include "models/reference_common.hpp"
#include "models/safetensors_writer.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <cstring>

using namespace cardsim;
using namespace cardsim::models;
using namespace cardsim::models::reference;
using namespace cardsim::models::test;

TEST_CASE("the reference's batched matrix product gives each vector the scalar sum's bits") {
    ScratchDir d("ref-linear");
    constexpr std::size_t out = 5, in = 23; // a row length with a tail past its groups of four
    std::vector<double> w;
    for (std::size_t i = 0; i < out * in; ++i)
        w.push_back(double(float(std::sin(0.37 * double(i)) * 3.0))); // f32 values, as a checkpoint holds
    std::filesystem::create_directories(d / "ck");
    write_file(d / "ck" / "config.json", "{}");
    write_safetensors(d / "ck" / "model.safetensors", {{"m.weight", Dtype::F32, {out, in}}}, {w});
    const auto c = Checkpoint::open(d / "ck");
    const Linear read = linear(c, "m"); // rows read from the checkpoint: the vector path
    REQUIRE(read.source != nullptr);
    Linear held; // the same matrix held in double: the scalar path
    held.w = w;
    held.out = out;
    held.in = in;
    for (std::size_t count = 1; count <= 9; ++count) {
        Rows xs;
        for (std::size_t t = 0; t < count; ++t) {
            Vec x;
            for (std::size_t i = 0; i < in; ++i)
                x.push_back(std::cos(0.11 * double(i * (t + 3))) * 1e3 + 1e-7 * double(t)); // wide magnitudes
            xs.push_back(x);
        }
        const auto batched = read(xs);
        REQUIRE(batched.size() == count);
        for (std::size_t t = 0; t < count; ++t) {
            const auto alone = held(xs[t]);
            INFO("vectors " << count << ", vector " << t);
            CHECK(std::memcmp(batched[t].data(), alone.data(), out * sizeof(double)) == 0);
        }
    }
}
