#pragma once
// Small pieces the f64 references share among themselves (and with nothing else): reading
// config.json fields and checkpoint tensors into double, and the arithmetic of transformers'
// modules in double.

#include "models/checkpoint.hpp"

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cardsim::models::reference {

using Vec = std::vector<double>;
/// Several vectors of one width: a batch of token positions, one `Vec` each.
using Rows = std::vector<Vec>;

/// A config.json object for the reference: fields by name, with transformers' defaults.
class Fields {
public:
    Fields(const boost::json::object& o, std::string file) : o_(&o), file_(std::move(file)) {}
    /// The number `key`, or `fallback` when absent; an error when absent without a fallback.
    double number(std::string_view key, std::optional<double> fallback = std::nullopt) const;
    /// The integer `key` (see number).
    std::size_t count(std::string_view key, std::optional<std::size_t> fallback = std::nullopt) const;
    /// The boolean `key`, or `fallback`.
    bool flag(std::string_view key, bool fallback) const;
    /// The string `key`, or `fallback`.
    std::string text(std::string_view key, std::string fallback) const;
    /// The strings of array `key`, or nothing.
    std::optional<std::vector<std::string>> texts(std::string_view key) const;
    /// The integers of array `key`, or empty.
    std::vector<std::size_t> counts(std::string_view key) const;
    /// The object `key`, if present.
    std::optional<Fields> object(std::string_view key) const;
    bool has(std::string_view key) const;
    /// Whether `key` is there at all, null included (transformers' defaults apply to absent keys).
    bool present(std::string_view key) const;

private:
    const boost::json::value* get(std::string_view key) const;
    const boost::json::object* o_;
    std::string file_;
};

/// `y = W x + b` with `W` as `[out, in]` (a transformers Linear). A matrix whose values f32 holds
/// exactly (bf16, f16, f32: every checkpoint cardsim writes) is read from the checkpoint a block of
/// rows at a time, as it is used, and never held in double: the reference's memory stays the
/// checkpoint's mapped pages, not a second copy of the model 4× its bf16 size. Any other dtype is
/// read into `w` once. Either way the products and sums are double, in the same order.
struct Linear {
    Vec w;                              ///< `[out, in]` in double, when not read from `source`
    const Checkpoint* source = nullptr; ///< the checkpoint the rows are read from (else `w`)
    graph::W tensor = 0;                ///< the matrix in `source`
    std::size_t first = 0;              ///< its first row there (an expert of a fused [E, out, in] tensor)
    Vec b;                              ///< empty when there is no bias
    std::size_t out = 0;
    std::size_t in = 0;
    Vec operator()(const Vec& x) const;
    /// `W x + b` for every `x` of `xs`, each matrix row read once for all of them; each output is the
    /// sum `operator()` forms for its `x` alone, bit for bit.
    Rows operator()(const Rows& xs) const;
    /// Row `j` of `W` in double (an embedding's lookup).
    Vec row(std::size_t j) const;
    bool empty() const { return out == 0; }
};

/// The tensor `name` in double (a cardsim::Error if absent).
Vec tensor(const Checkpoint& c, const std::string& name);
/// Whether `name` exists.
bool has(const Checkpoint& c, const std::string& name);
/// The Linear `<module>.weight` (+ `<module>.bias` if present).
Linear linear(const Checkpoint& c, const std::string& module);
/// The matrix `name` (`[out, in]`) as a Linear without bias: an embedding table, read row by row.
Linear matrix(const Checkpoint& c, const std::string& name);
/// Rows `first` .. `first + out` of tensor `w` read as a matrix of rows `in` wide (its last
/// dimension; the leading ones flattened), as a Linear without bias.
Linear rows_of(const Checkpoint& c, graph::W w, std::size_t first, std::size_t out);

double sigmoid(double x);
double silu(double x);
double softplus(double x);
double gelu(double x);
/// Softmax of `x` (max subtracted first).
Vec softmax(Vec x);
/// `x · rsqrt(mean(x²) + eps) · w` (or `· (1 + w)` when `zero_centred`).
Vec rms_norm(const Vec& x, const Vec& w, double eps, bool zero_centred);
/// `(x − mean) / sqrt(var + eps) · w + b` (b may be empty).
Vec layer_norm(const Vec& x, const Vec& w, const Vec& b, double eps);
/// transformers' `apply_rotary_pos_emb` on one head `x` (rotate_half over the first `rotary_dim`,
/// cos/sin of `cat(freqs, freqs)` with `inv_freq = 1 / theta^(2i / rotary_dim)`).
void rope(double* x, std::size_t rotary_dim, std::size_t position, double theta);

} // namespace cardsim::models::reference
