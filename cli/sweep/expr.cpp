#include "cli/sweep/expr.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

namespace cardsim::cli::sweep {

std::string show(const Value& v) {
    if (auto d = std::get_if<double>(&v)) return fmt::format("{}", *d);
    if (auto s = std::get_if<std::string>(&v)) return fmt::format("\"{}\"", *s);
    return std::get<bool>(v) ? "true" : "false";
}

namespace {

/// The name of a value's type, for messages.
std::string_view type_name(const Value& v) {
    return std::holds_alternative<double>(v)        ? "a number"
           : std::holds_alternative<std::string>(v) ? "a string"
                                                    : "a boolean";
}

/// The spelling of a binary operator code.
std::string_view spelling(char op) {
    switch (op) {
    case 'l':
        return "<=";
    case 'g':
        return ">=";
    case '=':
        return "==";
    case 'n':
        return "!=";
    case '&':
        return "and";
    case '|':
        return "or";
    case '!':
        return "not";
    default:
        return std::string_view("+-*/%<>").substr(std::string_view("+-*/%<>").find(op), 1);
    }
}

} // namespace

/// Recursive-descent parser of the grammar in expr.hpp; builds an Expression's nodes.
class ExpressionParser {
public:
    ExpressionParser(std::string_view text, std::string_view where) : text_(text), where_(where) {}

    /// Parses the whole text into an Expression.
    Expression run() {
        Expression e;
        e.text_ = std::string(text_);
        out_ = &e;
        skip_space();
        if (at_ == text_.size()) fail("expected an expression");
        parse_or();
        skip_space();
        if (at_ != text_.size()) fail("expected an operator or the end");
        return e;
    }

private:
    /// Throws a syntax error at the current column.
    [[noreturn]] void fail(std::string_view what) const {
        throw Error(fmt::format("{}: expression \"{}\": at column {}: {}{}", where_, text_, at_ + 1, what,
                                at_ < text_.size() ? fmt::format(" (found `{}`)", text_.substr(at_)) : ""));
    }
    /// Moves past spaces.
    void skip_space() {
        while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_])))
            ++at_;
    }
    /// Consumes `token` (after spaces) if it is next; words must end at a non-name character.
    bool accept(std::string_view token) {
        skip_space();
        if (text_.substr(at_, token.size()) != token) return false;
        if (std::isalpha(static_cast<unsigned char>(token[0]))) {
            std::size_t end = at_ + token.size();
            if (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) ||
                                       text_[end] == '_' || text_[end] == '.'))
                return false;
        }
        at_ += token.size();
        return true;
    }
    /// Appends a node; returns its index.
    std::size_t add(Expression::Node n) {
        out_->nodes_.push_back(std::move(n));
        return out_->nodes_.size() - 1;
    }
    /// or := and { or and }
    std::size_t parse_or() {
        auto left = parse_and();
        while (accept("or") || accept("||"))
            left = add(Expression::Binary{'|', left, parse_and()});
        return left;
    }
    /// and := not { and not }
    std::size_t parse_and() {
        auto left = parse_not();
        while (accept("and") || accept("&&"))
            left = add(Expression::Binary{'&', left, parse_not()});
        return left;
    }
    /// Counts one level of nesting (`(`, `not`, unary `-`) while it lives; past `max_depth` levels
    /// the text is refused, so the parser's recursion is bounded.
    struct Nest {
        ExpressionParser& p;
        explicit Nest(ExpressionParser& parser) : p(parser) {
            if (++p.depth_ > max_depth)
                p.fail(fmt::format("nested more than {} deep (parentheses, not and unary -)", max_depth));
        }
        ~Nest() { --p.depth_; }
        Nest(const Nest&) = delete;
        Nest& operator=(const Nest&) = delete;
    };
    static constexpr std::size_t max_depth = 256;

    /// not := not not | cmp
    std::size_t parse_not() {
        Nest nest(*this);
        skip_space();
        if (accept("not") || (text_.substr(at_, 2) != "!=" && accept("!")))
            return add(Expression::Unary{'!', parse_not()});
        return parse_cmp();
    }
    /// cmp := sum [ comparison sum ]
    std::size_t parse_cmp() {
        auto left = parse_sum();
        static constexpr std::pair<std::string_view, char> ops[] = {{"<=", 'l'}, {">=", 'g'}, {"==", '='},
                                                                    {"!=", 'n'}, {"<", '<'},  {">", '>'}};
        for (auto [token, op] : ops)
            if (accept(token)) return add(Expression::Binary{op, left, parse_sum()});
        return left;
    }
    /// sum := prod { (+|-) prod }
    std::size_t parse_sum() {
        auto left = parse_prod();
        for (;;) {
            if (accept("+"))
                left = add(Expression::Binary{'+', left, parse_prod()});
            else if (accept("-"))
                left = add(Expression::Binary{'-', left, parse_prod()});
            else
                return left;
        }
    }
    /// prod := unary { (*|/|%) unary }
    std::size_t parse_prod() {
        auto left = parse_unary();
        for (;;) {
            if (accept("*"))
                left = add(Expression::Binary{'*', left, parse_unary()});
            else if (accept("/"))
                left = add(Expression::Binary{'/', left, parse_unary()});
            else if (accept("%"))
                left = add(Expression::Binary{'%', left, parse_unary()});
            else
                return left;
        }
    }
    /// unary := - unary | atom
    std::size_t parse_unary() {
        Nest nest(*this);
        if (accept("-")) return add(Expression::Unary{'-', parse_unary()});
        return parse_atom();
    }
    /// atom := number | string | true | false | name | ( expr )
    std::size_t parse_atom() {
        skip_space();
        if (at_ == text_.size()) fail("expected a number, a string, a name or `(`");
        char c = text_[at_];
        if (accept("(")) {
            Nest nest(*this);
            auto inner = parse_or();
            if (!accept(")")) fail("expected `)`");
            return inner;
        }
        if (c == '"' || c == '\'') {
            auto end = text_.find(c, at_ + 1);
            if (end == std::string_view::npos) fail("expected the string's closing quote");
            std::string s(text_.substr(at_ + 1, end - at_ - 1));
            at_ = end + 1;
            return add(Expression::Literal{s});
        }
        if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
            const std::string rest(text_.substr(at_));
            char* end = nullptr;
            double v = std::strtod(rest.c_str(), &end);
            if (end == rest.c_str()) fail("expected a number");
            at_ += std::size_t(end - rest.c_str());
            return add(Expression::Literal{v});
        }
        if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            std::size_t end = at_;
            while (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) ||
                                          text_[end] == '_' || text_[end] == '.'))
                ++end;
            std::string word(text_.substr(at_, end - at_));
            if (word.back() == '.') fail("expected a name (a dotted path such as ddr.channels)");
            if (word == "and" || word == "or" || word == "not") fail("expected a value before the operator");
            at_ = end;
            if (word == "true") return add(Expression::Literal{true});
            if (word == "false") return add(Expression::Literal{false});
            return add(Expression::Name{word});
        }
        fail("expected a number, a string, a name or `(`");
    }

    std::string_view text_, where_;
    std::size_t at_ = 0;
    std::size_t depth_ = 0;
    Expression* out_ = nullptr;
};

Expression Expression::parse(std::string_view text, std::string_view where) {
    return ExpressionParser(text, where).run();
}

std::vector<std::string> Expression::names() const {
    std::vector<std::string> out;
    for (auto& n : nodes_)
        if (auto name = std::get_if<Name>(&n))
            if (std::find(out.begin(), out.end(), name->path) == out.end()) out.push_back(name->path);
    return out;
}

Value Expression::evaluate(const std::function<Value(const std::string&)>& lookup,
                           std::string_view where) const {
    return eval(nodes_.size() - 1, lookup, where);
}

Value Expression::eval(std::size_t node, const std::function<Value(const std::string&)>& lookup,
                       std::string_view where) const {
    auto type_error = [&](std::string_view op, const Value& a, const Value* b) -> Error {
        return Error(fmt::format("{}: expression \"{}\": `{}` cannot take {} ({}){}", where, text_, op,
                                 type_name(a), show(a),
                                 b ? fmt::format(" and {} ({})", type_name(*b), show(*b)) : ""));
    };
    const Node& n = nodes_[node];
    if (auto lit = std::get_if<Literal>(&n)) return lit->value;
    if (auto name = std::get_if<Name>(&n)) return lookup(name->path);
    if (auto un = std::get_if<Unary>(&n)) {
        Value v = eval(un->operand, lookup, where);
        if (un->op == '-') {
            if (auto d = std::get_if<double>(&v)) return -*d;
            throw type_error("-", v, nullptr);
        }
        if (auto b = std::get_if<bool>(&v)) return !*b;
        throw type_error("not", v, nullptr);
    }
    const auto& bin = std::get<Binary>(n);
    Value a = eval(bin.left, lookup, where);
    if (bin.op == '&' || bin.op == '|') {
        auto ab = std::get_if<bool>(&a);
        if (!ab) throw type_error(spelling(bin.op), a, nullptr);
        if ((bin.op == '&') != *ab) return *ab; // short-circuit: false and ..., true or ...
        Value b = eval(bin.right, lookup, where);
        if (!std::holds_alternative<bool>(b)) throw type_error(spelling(bin.op), a, &b);
        return b;
    }
    Value b = eval(bin.right, lookup, where);
    if (bin.op == '=' || bin.op == 'n') {
        if (a.index() != b.index()) throw type_error(spelling(bin.op), a, &b);
        return (a == b) == (bin.op == '=');
    }
    auto da = std::get_if<double>(&a), db = std::get_if<double>(&b);
    if (bin.op == '<' || bin.op == '>' || bin.op == 'l' || bin.op == 'g') {
        int cmp = 0;
        if (da && db)
            cmp = *da < *db ? -1 : *da > *db ? 1 : 0;
        else if (std::holds_alternative<std::string>(a) && std::holds_alternative<std::string>(b))
            cmp = std::get<std::string>(a).compare(std::get<std::string>(b));
        else
            throw type_error(spelling(bin.op), a, &b);
        switch (bin.op) {
        case '<':
            return cmp < 0;
        case '>':
            return cmp > 0;
        case 'l':
            return cmp <= 0;
        default:
            return cmp >= 0;
        }
    }
    if (!da || !db) throw type_error(spelling(bin.op), a, &b);
    if ((bin.op == '/' || bin.op == '%') && *db == 0)
        throw Error(fmt::format("{}: expression \"{}\": `{}` by zero ({} {} 0)", where, text_,
                                spelling(bin.op), show(a), spelling(bin.op)));
    double r = 0;
    switch (bin.op) {
    case '+':
        r = *da + *db;
        break;
    case '-':
        r = *da - *db;
        break;
    case '*':
        r = *da * *db;
        break;
    case '/':
        r = *da / *db;
        break;
    default:
        r = std::fmod(*da, *db);
    }
    if (!std::isfinite(r))
        throw Error(fmt::format("{}: expression \"{}\": {} {} {} is not a finite number", where, text_,
                                show(a), spelling(bin.op), show(b)));
    return r;
}

} // namespace cardsim::cli::sweep
