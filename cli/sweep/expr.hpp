#pragma once
// The constraint language of sweep specs (`skip_if = "ddr.channels * clock.kernel_mhz > 1200"`):
// a tiny expression language over the values of one grid point.
//
//   expr  := or                         values: numbers (f64), strings, booleans
//   or    := and  { ("or"  | "||") and }
//   and   := not  { ("and" | "&&") not }
//   not   := ("not" | "!") not | cmp
//   cmp   := sum [ ("<" | "<=" | ">" | ">=" | "==" | "!=") sum ]
//   sum   := prod { ("+" | "-") prod }
//   prod  := unary { ("*" | "/" | "%") unary }
//   unary := "-" unary | atom
//   atom  := number | 'string' | "string" | true | false | name | "(" expr ")"
//
// A name is a dotted path (`ddr.channels`, `model`); what it means is the caller's (see
// grid.hpp). Arithmetic takes numbers; `==` and `!=` take two values of one type; `<`...`>=`
// take two numbers or two strings; `and`, `or`, `not` take booleans. Nesting (parentheses, `not`,
// unary `-`) is at most 256 deep; a division or remainder by zero, or a result that is not a
// finite number, is an error naming the expression and the point.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cardsim::cli::sweep {

/// A value of an expression: a number, a string or a boolean.
using Value = std::variant<double, std::string, bool>;

/// The value as text for messages (`4`, `"sub32"`, `true`).
std::string show(const Value& v);

/// A parsed expression: its nodes in a flat vector (children before parents; the last is the root).
class Expression {
public:
    /// Parses `text`. A syntax error is a cardsim::Error starting with `where` (the spec file and
    /// line), quoting the expression and saying at which column what was expected.
    static Expression parse(std::string_view text, std::string_view where);

    /// The names the expression reads, once each, in order of first use.
    std::vector<std::string> names() const;

    /// Evaluates the expression, looking names up with `lookup`. A type error (e.g. a string
    /// times a number) is a cardsim::Error starting with `where`.
    Value evaluate(const std::function<Value(const std::string&)>& lookup, std::string_view where) const;

    /// The source text.
    const std::string& text() const { return text_; }

    /// A literal value.
    struct Literal {
        Value value;
    };
    /// A name to look up.
    struct Name {
        std::string path;
    };
    /// `-x` or `not x`.
    struct Unary {
        char op; ///< '-' or '!'
        std::size_t operand;
    };
    /// `a op b`; op is one of + - * / % < > l (<=) g (>=) = (==) n (!=) & (and) | (or).
    struct Binary {
        char op;
        std::size_t left, right;
    };
    using Node = std::variant<Literal, Name, Unary, Binary>;

private:
    friend class ExpressionParser;
    Value eval(std::size_t node, const std::function<Value(const std::string&)>& lookup,
               std::string_view where) const;

    std::string text_;
    std::vector<Node> nodes_;
};

} // namespace cardsim::cli::sweep
