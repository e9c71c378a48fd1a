#include "models/reference_common.hpp"

#include "engine/error.hpp"
#include "engine/kernels/parallel.hpp"

#include <boost/json.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include <immintrin.h>

namespace cardsim::models::reference {

const boost::json::value* Fields::get(std::string_view key) const {
    const auto* v = o_->if_contains(boost::json::string_view(key.data(), key.size()));
    return v && !v->is_null() ? v : nullptr;
}

bool Fields::has(std::string_view key) const {
    return get(key) != nullptr;
}

bool Fields::present(std::string_view key) const {
    return o_->if_contains(boost::json::string_view(key.data(), key.size())) != nullptr;
}

double Fields::number(std::string_view key, std::optional<double> fallback) const {
    const auto* v = get(key);
    if (!v) {
        if (fallback) return *fallback;
        throw Error(fmt::format("{}: the reference needs field `{}`", file_, key));
    }
    if (v->is_double()) return v->as_double();
    if (v->is_int64()) return static_cast<double>(v->as_int64());
    if (v->is_uint64()) return static_cast<double>(v->as_uint64());
    throw Error(fmt::format("{}: field `{}` is not a number", file_, key));
}

std::size_t Fields::count(std::string_view key, std::optional<std::size_t> fallback) const {
    const double x =
        number(key, fallback ? std::optional<double>(static_cast<double>(*fallback)) : std::nullopt);
    if (!(x >= 0 && x < 0x1p53) || std::floor(x) != x)
        throw Error(fmt::format("{}: field `{}` is not a count", file_, key));
    return static_cast<std::size_t>(x);
}

bool Fields::flag(std::string_view key, bool fallback) const {
    const auto* v = get(key);
    return v && v->is_bool() ? v->as_bool() : fallback;
}

std::string Fields::text(std::string_view key, std::string fallback) const {
    const auto* v = get(key);
    return v && v->is_string() ? std::string(v->as_string()) : fallback;
}

std::optional<std::vector<std::string>> Fields::texts(std::string_view key) const {
    const auto* v = get(key);
    if (!v || !v->is_array()) return std::nullopt;
    std::vector<std::string> out;
    for (auto& e : v->as_array())
        if (e.is_string()) out.emplace_back(e.as_string());
    return out;
}

std::vector<std::size_t> Fields::counts(std::string_view key) const {
    std::vector<std::size_t> out;
    const auto* v = get(key);
    if (v && v->is_array())
        for (auto& e : v->as_array())
            if (e.is_int64() || e.is_uint64())
                out.push_back(static_cast<std::size_t>(e.to_number<std::uint64_t>()));
    return out;
}

std::optional<Fields> Fields::object(std::string_view key) const {
    const auto* v = get(key);
    if (!v || !v->is_object()) return std::nullopt;
    return Fields(v->as_object(), file_);
}

namespace {

/// Σ a_i x_i in double over four interleaved partial sums (i mod 4), added pairwise at the end: a
/// fixed order on every machine and thread, and four independent chains for the adder.
template <class T>
double dot(const T* a, const double* x, std::size_t n) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += double(a[i]) * x[i];
        s1 += double(a[i + 1]) * x[i + 1];
        s2 += double(a[i + 2]) * x[i + 2];
        s3 += double(a[i + 3]) * x[i + 3];
    }
    for (; i < n; ++i)
        s0 += double(a[i]) * x[i];
    return (s0 + s1) + (s2 + s3);
}

/// `dot(a, xs[t], n)` for each of the `count` vectors `xs`, into `out[t]`: the sums in `dot`'s order.
template <class T>
void dots(const T* a, const double* const* xs, std::size_t count, std::size_t n, double* out) {
    for (std::size_t t = 0; t < count; ++t)
        out[t] = dot(a, xs[t], n);
}

/// `dot`'s end from its four partial sums in `acc`: the tail from `whole` to `n` joins s_0, then the
/// pairwise sum.
__attribute__((target("avx2"), always_inline)) inline double
finish_dot(__m256d acc, const float* a, const double* x, std::size_t whole, std::size_t n) {
    alignas(32) double s[4];
    _mm256_store_pd(s, acc);
    for (std::size_t i = whole; i < n; ++i)
        s[0] += double(a[i]) * x[i];
    return (s[0] + s[1]) + (s[2] + s[3]);
}

/// `dots` of one f32 row with `R` vectors at once, with AVX2: lane k of vector r's four doubles is
/// partial sum s_k of `dot(a, xs[r])`, each product rounded and then added as there (no fused
/// multiply-add), so the bits are `dot`'s. The R sums are independent chains sharing each load of
/// the row: with up to 8 of them the adds keep the FP pipes busy instead of waiting each add's
/// latency (one chain alone adds 4 values every 4 cycles).
template <std::size_t R>
__attribute__((target("avx2"), always_inline)) inline void
dots_rows_avx2(const float* a, const double* const* xs, std::size_t n, double* out) {
    const std::size_t whole = n / 4 * 4;
    __m256d s[R];
    for (std::size_t r = 0; r < R; ++r)
        s[r] = _mm256_setzero_pd();
    for (std::size_t i = 0; i < whole; i += 4) {
        const __m256d w = _mm256_cvtps_pd(_mm_loadu_ps(a + i));
        for (std::size_t r = 0; r < R; ++r)
            s[r] = _mm256_add_pd(s[r], _mm256_mul_pd(w, _mm256_loadu_pd(xs[r] + i)));
    }
    for (std::size_t r = 0; r < R; ++r)
        out[r] = finish_dot(s[r], a, xs[r], whole, n);
}

/// `dots_rows_avx2<m>` for a group of `m` vectors, m in 1 .. sizeof...(R) (R = 0, 1, ...).
template <std::size_t... R>
__attribute__((target("avx2"))) void dots_group_avx2(std::size_t m, const float* a, const double* const* xs,
                                                     std::size_t n, double* out, std::index_sequence<R...>) {
    (void)((m == R + 1 && (dots_rows_avx2<R + 1>(a, xs, n, out), true)) || ...);
}

/// `dots` of f32 rows with AVX2 (dots_rows_avx2), the vectors in groups of up to 8.
__attribute__((target("avx2"))) void dots_avx2(const float* a, const double* const* xs, std::size_t count,
                                               std::size_t n, double* out) {
    for (std::size_t t = 0; t < count; t += 8)
        dots_group_avx2(std::min<std::size_t>(count - t, 8), a, xs + t, n, out + t,
                        std::make_index_sequence<8>{});
}

/// Whether this host runs `dots_avx2`.
bool has_avx2() {
    static const bool yes = __builtin_cpu_supports("avx2");
    return yes;
}

} // namespace

Vec Linear::operator()(const Vec& x) const {
    return (*this)(Rows{x})[0];
}

Rows Linear::operator()(const Rows& xs) const {
    Rows ys(xs.size(), Vec(out, 0.0));
    if (xs.empty()) return ys;
    std::vector<const double*> x;
    for (const auto& v : xs)
        x.push_back(v.data());
    // Each output is its own sum in the same order on any thread: the threads never change a value.
    // Rows are read a block of about 64 KiB at a time into a buffer each thread reuses: a thread's
    // share of a large matrix (an LM head) is never allocated, faulted in and zeroed whole.
    const std::size_t block = std::max<std::size_t>(1, 16384 / std::max<std::size_t>(in, 1));
    const bool avx2 = has_avx2();
    kernels::parallel_for(
        out, std::max<std::size_t>(1, 8192 / std::max<std::size_t>(in * xs.size(), 1)),
        [&](std::size_t begin, std::size_t end) {
            std::vector<float> rows(source ? std::min(block, end - begin) * in : 0);
            std::vector<double> sums(xs.size());
            for (std::size_t at = begin; at < end; at += block) {
                const std::size_t n = std::min(block, end - at);
                if (source)
                    source->read_rows_f32(tensor, graph::Whole{false}, first + at, n,
                                          std::span(rows).first(n * in));
                for (std::size_t j = at; j < at + n; ++j) {
                    if (!source)
                        dots(w.data() + j * in, x.data(), x.size(), in, sums.data());
                    else if (avx2)
                        dots_avx2(rows.data() + (j - at) * in, x.data(), x.size(), in, sums.data());
                    else
                        dots(rows.data() + (j - at) * in, x.data(), x.size(), in, sums.data());
                    for (std::size_t t = 0; t < xs.size(); ++t)
                        ys[t][j] = sums[t] + (b.empty() ? 0.0 : b[j]);
                }
            }
        });
    // The matrix's mapped pages go back (they stay in the page cache): the process never holds
    // more of the checkpoint than the matrix in use.
    if (source) source->release(tensor);
    return ys;
}

Vec Linear::row(std::size_t j) const {
    if (!source) return Vec(w.begin() + std::ptrdiff_t(j * in), w.begin() + std::ptrdiff_t((j + 1) * in));
    std::vector<float> r(in);
    source->read_rows_f32(tensor, graph::Whole{false}, first + j, 1, r);
    return Vec(r.begin(), r.end());
}

bool has(const Checkpoint& c, const std::string& name) {
    return c.find(name).has_value();
}

Vec tensor(const Checkpoint& c, const std::string& name) {
    const auto w = c.require(name);
    return c.values(w, graph::Whole{false});
}

Linear matrix(const Checkpoint& c, const std::string& name) {
    Linear l;
    const auto w = c.require(name);
    const auto shape = c.shape(w);
    if (shape.size() != 2) throw Error(fmt::format("{}: `{}` is not a matrix", c.dir().string(), name));
    l.out = shape[0];
    l.in = shape[1];
    const auto d = c.dtype(w);
    if (d == Dtype::BF16 || d == Dtype::F16 || d == Dtype::F32) { // exact in f32
        l.source = &c;
        l.tensor = w;
    } else {
        l.w = c.values(w, graph::Whole{false});
    }
    return l;
}

Linear rows_of(const Checkpoint& c, graph::W w, std::size_t first, std::size_t out) {
    const auto shape = c.shape(w);
    Linear l;
    l.out = out;
    l.in = shape.back();
    const auto d = c.dtype(w);
    if (d == Dtype::BF16 || d == Dtype::F16 || d == Dtype::F32) {
        l.source = &c;
        l.tensor = w;
        l.first = first;
    } else {
        const auto all = c.values(w, graph::Whole{false});
        const auto at = all.begin() + static_cast<std::ptrdiff_t>(first * l.in);
        l.w.assign(at, at + static_cast<std::ptrdiff_t>(out * l.in));
    }
    return l;
}

Linear linear(const Checkpoint& c, const std::string& module) {
    Linear l = matrix(c, module + ".weight");
    if (has(c, module + ".bias")) l.b = tensor(c, module + ".bias");
    return l;
}

double sigmoid(double x) {
    return 1.0 / (1.0 + std::exp(-x));
}
double silu(double x) {
    return x / (1.0 + std::exp(-x));
}
double softplus(double x) {
    return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x)));
}
double gelu(double x) {
    return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
}

Vec softmax(Vec x) {
    if (x.empty()) return x;
    const double m = *std::max_element(x.begin(), x.end());
    double s = 0;
    for (auto& v : x) {
        v = std::exp(v - m);
        s += v;
    }
    for (auto& v : x)
        v /= s;
    return x;
}

Vec rms_norm(const Vec& x, const Vec& w, double eps, bool zero_centred) {
    double ms = 0;
    for (double v : x)
        ms += v * v;
    ms /= static_cast<double>(x.size());
    const double r = 1.0 / std::sqrt(ms + eps);
    Vec y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
        y[i] = x[i] * r * (zero_centred ? 1.0 + w[i] : w[i]);
    return y;
}

Vec layer_norm(const Vec& x, const Vec& w, const Vec& b, double eps) {
    double mean = 0, var = 0;
    for (double v : x)
        mean += v;
    mean /= static_cast<double>(x.size());
    for (double v : x)
        var += (v - mean) * (v - mean);
    var /= static_cast<double>(x.size());
    Vec y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
        y[i] = (x[i] - mean) / std::sqrt(var + eps) * w[i] + (b.empty() ? 0.0 : b[i]);
    return y;
}

void rope(double* x, std::size_t rotary_dim, std::size_t position, double theta) {
    const std::size_t half = rotary_dim / 2;
    Vec cos(rotary_dim), sin(rotary_dim), rotated(rotary_dim);
    for (std::size_t i = 0; i < half; ++i) {
        const double inv_freq =
            1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(rotary_dim));
        const double f = static_cast<double>(position) * inv_freq;
        cos[i] = cos[i + half] = std::cos(f);
        sin[i] = sin[i + half] = std::sin(f);
    }
    for (std::size_t i = 0; i < half; ++i) { // rotate_half: cat(−x2, x1)
        rotated[i] = -x[i + half];
        rotated[i + half] = x[i];
    }
    for (std::size_t i = 0; i < rotary_dim; ++i)
        x[i] = x[i] * cos[i] + rotated[i] * sin[i];
}

} // namespace cardsim::models::reference
