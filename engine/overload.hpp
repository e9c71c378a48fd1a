#pragma once
// The visitor of lambdas: one call operator per alternative of a std::variant, for std::visit.

namespace cardsim {

/// The call operators of every `F` as one visitor: `std::visit(Overload{[](const A&) {...},
/// [](const B&) {...}}, v)`. Overload resolution picks the lambda for the held alternative.
template <class... F>
struct Overload : F... {
    using F::operator()...;
};
template <class... F>
Overload(F...) -> Overload<F...>;

} // namespace cardsim
