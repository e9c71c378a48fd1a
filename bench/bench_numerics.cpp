// Benchmarks of the numerics library (figures in engine/numerics/README.md): activation
// quantisation, the exact matvec against a plain float dot and an unchecked int8 dot on the same
// data, the Hadamard rotation, every nonlinear function, and the router and expert combine.

#include "engine/numerics/activation.hpp"
#include "engine/numerics/combine.hpp"
#include "engine/numerics/functions.hpp"
#include "engine/numerics/hadamard.hpp"
#include "engine/numerics/matvec.hpp"
#include "engine/numerics/router.hpp"
#include "engine/numerics/weights.hpp"

#include <benchmark/benchmark.h>

#include <immintrin.h>
#include <random>
#include <vector>

using namespace cardsim::numerics;

namespace {

constexpr std::size_t N = 4096;

std::vector<float> gaussian(std::size_t n, unsigned seed, float sigma = 1.0f) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> d(0.0f, sigma);
    std::vector<float> v(n);
    for (auto& x : v)
        x = d(rng);
    return v;
}

/// The shared data: a 4096 x 4096 matrix (f32 and quantised) and one activation row.
struct Data {
    std::vector<float> w = gaussian(N * N, 1, 0.02f);
    std::vector<float> x = gaussian(N, 2);
};
const Data& data() {
    static const Data d;
    return d;
}

void exact_matvec(benchmark::State& state, CodeFormat codes, ScaleFormat scale, Scheme scheme) {
    QuantizedMatrix m = quantize_matrix(data().w, N, {codes, scale, 32});
    QuantizedActivation a = quantize(data().x, scheme, 32);
    PreparedActivation p = prepare(a, m.layout);
    std::vector<float> out(N);
    MatrixView v = m.view();
    for (auto _ : state) {
        matvec(v, p, out, 0);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * N * N));
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * m.bytes.size()));
}

const Scheme sub32{Values{32}, LeastPowerOfTwo{NARROW_BITS}, 1};
const Scheme sub32_two{Values{32}, LeastPowerOfTwo{NARROW_BITS}, 2};
const Scheme per_block{OfTheWeights{}, LeastPowerOfTwo{WIDE_BITS}, 1};

void BM_MatvecExactInt8(benchmark::State& s) {
    exact_matvec(s, CodeFormat::Int8, ScaleFormat::E8M0, sub32);
}
void BM_MatvecExactInt8F16(benchmark::State& s) {
    exact_matvec(s, CodeFormat::Int8, ScaleFormat::F16, sub32);
}
void BM_MatvecExactInt8TwoWords(benchmark::State& s) {
    exact_matvec(s, CodeFormat::Int8, ScaleFormat::E8M0, sub32_two);
}
void BM_MatvecExactInt8PerBlock(benchmark::State& s) {
    exact_matvec(s, CodeFormat::Int8, ScaleFormat::E8M0, per_block);
}
void BM_MatvecExactInt4(benchmark::State& s) {
    exact_matvec(s, CodeFormat::Int4, ScaleFormat::E8M0, sub32);
}
void BM_MatvecExactInt4F16(benchmark::State& s) {
    exact_matvec(s, CodeFormat::Int4, ScaleFormat::F16, sub32);
}
BENCHMARK(BM_MatvecExactInt8)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatvecExactInt8F16)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatvecExactInt8TwoWords)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatvecExactInt8PerBlock)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatvecExactInt4)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatvecExactInt4F16)->Unit(benchmark::kMillisecond);

/// The baseline: the same int8 codes times the same activation codes (int8), summed in int32 per
/// row, no scales, no exactness.
__attribute__((target("avx2"))) void unchecked_int8(const std::int8_t* w, std::size_t stride,
                                                    const std::int8_t* a, std::int32_t* out) {
    for (std::size_t r = 0; r < N; ++r) {
        const std::int8_t* row = w + r * stride;
        __m256i acc = _mm256_setzero_si256();
        for (std::size_t c = 0; c < N; c += 32) {
            const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + c));
            const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + c));
            const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(wv), _mm256_sign_epi8(av, wv));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
        }
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
        out[r] = _mm_cvtsi128_si32(s);
    }
}

void BM_MatvecUncheckedInt8(benchmark::State& state) {
    QuantizedMatrix m = quantize_matrix(data().w, N, {CodeFormat::Int8, ScaleFormat::E8M0, 32});
    QuantizedActivation a = quantize(data().x, sub32, 32);
    std::vector<std::int8_t> codes(a.codes.begin(), a.codes.end());
    std::vector<std::int32_t> out(N);
    for (auto _ : state) {
        unchecked_int8(reinterpret_cast<const std::int8_t*>(m.bytes.data()), m.layout.row_stride(),
                       codes.data(), out.data());
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * N * N));
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * m.bytes.size()));
}
BENCHMARK(BM_MatvecUncheckedInt8)->Unit(benchmark::kMillisecond);

/// The other baseline: a plain f32 dot per row over the dequantised matrix (64 MiB of weights).
__attribute__((target("avx2,fma"))) void float_dot(const float* w, const float* x, float* out) {
    for (std::size_t r = 0; r < N; ++r) {
        const float* row = w + r * N;
        __m256i dummy = _mm256_setzero_si256();
        (void)dummy;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        for (std::size_t c = 0; c < N; c += 16) {
            acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c), _mm256_loadu_ps(x + c), acc0);
            acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c + 8), _mm256_loadu_ps(x + c + 8), acc1);
        }
        alignas(32) float lanes[8];
        _mm256_store_ps(lanes, _mm256_add_ps(acc0, acc1));
        float s = 0;
        for (float l : lanes)
            s += l;
        out[r] = s;
    }
}

void BM_MatvecPlainFloat(benchmark::State& state) {
    QuantizedMatrix m = quantize_matrix(data().w, N, {CodeFormat::Int8, ScaleFormat::E8M0, 32});
    std::vector<float> w(N * N);
    MatrixView v = m.view();
    for (std::size_t r = 0; r < N; ++r) {
        auto row = v.dequantize_row(r);
        std::copy(row.begin(), row.end(), w.begin() + static_cast<std::ptrdiff_t>(r * N));
    }
    std::vector<float> x = dequantize(quantize(data().x, sub32, 32)), out(N);
    for (auto _ : state) {
        float_dot(w.data(), x.data(), out.data());
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * N * N));
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * N * N * sizeof(float)));
}
BENCHMARK(BM_MatvecPlainFloat)->Unit(benchmark::kMillisecond);

void quantize_activation(benchmark::State& state, Scheme scheme) {
    const std::vector<float>& x = data().x;
    for (auto _ : state) {
        QuantizedActivation q = quantize(x, scheme, 32);
        benchmark::DoNotOptimize(q.codes.data());
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * x.size()));
}
void BM_QuantizeSub32(benchmark::State& s) {
    quantize_activation(s, sub32);
}
void BM_QuantizeSub32TwoWords(benchmark::State& s) {
    quantize_activation(s, sub32_two);
}
void BM_QuantizePerBlock(benchmark::State& s) {
    quantize_activation(s, per_block);
}
BENCHMARK(BM_QuantizeSub32);
BENCHMARK(BM_QuantizeSub32TwoWords);
BENCHMARK(BM_QuantizePerBlock);

void BM_Hadamard(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    std::vector<float> x = gaussian(N, 3);
    for (auto _ : state) {
        hadamard_heads(x, n);
        benchmark::DoNotOptimize(x.data());
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * N));
}
BENCHMARK(BM_Hadamard)->Arg(64)->Arg(128)->Arg(256);

/// One function over 4096 inputs drawn as the units see them (Gaussian, scaled per function).
void function(benchmark::State& state, Function f, float sigma, bool positive) {
    std::vector<float> x = gaussian(N, 4, sigma);
    if (positive)
        for (float& v : x)
            v = std::abs(v) + 1e-3f;
    float sink = 0;
    for (auto _ : state) {
        for (float v : x)
            sink += apply(f, v);
        benchmark::DoNotOptimize(sink);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * N));
}
void BM_Exp(benchmark::State& s) {
    function(s, Function::Exp, 4.0f, false);
}
void BM_Sigmoid(benchmark::State& s) {
    function(s, Function::Sigmoid, 4.0f, false);
}
void BM_Silu(benchmark::State& s) {
    function(s, Function::Silu, 4.0f, false);
}
void BM_Softplus(benchmark::State& s) {
    function(s, Function::Softplus, 4.0f, false);
}
void BM_Rsqrt(benchmark::State& s) {
    function(s, Function::Rsqrt, 100.0f, true);
}
void BM_Sin(benchmark::State& s) {
    function(s, Function::Sin, 1000.0f, false);
}
void BM_Cos(benchmark::State& s) {
    function(s, Function::Cos, 1000.0f, false);
}
void BM_Gelu(benchmark::State& s) {
    function(s, Function::Gelu, 4.0f, false);
}
BENCHMARK(BM_Exp);
BENCHMARK(BM_Sigmoid);
BENCHMARK(BM_Silu);
BENCHMARK(BM_Softplus);
BENCHMARK(BM_Rsqrt);
BENCHMARK(BM_Sin);
BENCHMARK(BM_Cos);
BENCHMARK(BM_Gelu);

/// One row routed: E = range(0) logits, k = range(1) chosen, softmax over the chosen.
void BM_Route(benchmark::State& state) {
    const auto E = static_cast<std::size_t>(state.range(0)), k = static_cast<std::size_t>(state.range(1));
    const std::vector<float> logits = gaussian(E, 5, 2.0f);
    std::vector<std::uint32_t> experts(k);
    std::vector<float> weights(k);
    for (auto _ : state) {
        route(logits, RouterNorm::TopK, experts, weights);
        benchmark::DoNotOptimize(weights.data());
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Route)->Args({128, 8})->Args({512, 10});

/// One row of H = 2048 combined from k = range(0) experts and a shared expert.
void BM_Combine(benchmark::State& state) {
    const std::size_t H = 2048, k = static_cast<std::size_t>(state.range(0));
    const std::vector<float> outputs = gaussian(k * H, 6), shared = gaussian(H, 7), w = gaussian(k, 8, 0.2f);
    std::vector<float> y(H);
    for (auto _ : state) {
        combine(w, outputs, SharedExpert{0.5f, shared}, y);
        benchmark::DoNotOptimize(y.data());
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * H));
}
BENCHMARK(BM_Combine)->Arg(8)->Arg(10);

} // namespace
