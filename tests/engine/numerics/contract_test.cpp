// The contract of every knob point, its text, and `cardsim numerics`.

#include "engine/error.hpp"
#include "engine/numerics/attention.hpp"
#include "engine/numerics/contract.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <memory>
#include <set>
#include <string>

using namespace cardsim::numerics;

namespace {

/// Runs the cardsim binary with `args`, returning its exit code and standard output.
std::pair<int, std::string> run_cardsim(const std::string& args) {
    std::string out;
    FILE* pipe = popen((std::string(CARDSIM_BINARY) + " " + args + " 2>/dev/null").c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::array<char, 4096> buffer{};
    while (std::fgets(buffer.data(), buffer.size(), pipe))
        out += buffer.data();
    const int status = pclose(pipe);
    return {WEXITSTATUS(status), out};
}

} // namespace

TEST_CASE("the default point takes the weights' blocks with wide codes and keeps f16 caches; sub32 takes "
          "blocks of 32 with 4 bits") {
    Contract c = contract(EngineNumerics{});
    REQUIRE(c.activations == Scheme{OfTheWeights{}, LeastPowerOfTwo{23}, 1});
    REQUIRE(c.cache == Keep::F16);
    REQUIRE(c.state == Keep::F32);
    REQUIRE_FALSE(c.attention.has_value());
    REQUIRE(c.fused == EXACT);
    REQUIRE(c.accumulator_bits == 64);
    REQUIRE(c.point == "the engine: scaling=per_block activations=one state=f32 cache=f16 attention=vector");
    EngineNumerics cheapest;
    cheapest.scaling = ActScaling::Sub32;
    REQUIRE(contract(cheapest).activations == Scheme{Values{32}, LeastPowerOfTwo{4}, 1});
}

TEST_CASE("per-block scaling takes the weights' blocks with wide codes and array attention a whole head") {
    EngineNumerics p;
    p.scaling = ActScaling::PerBlock;
    p.activations = Words::Two;
    p.state = StateFormat::F16;
    p.cache = CacheFormat::Int8Hadamard;
    p.attention = AttentionMath::Array;
    Contract c = contract(p);
    REQUIRE(c.activations == Scheme{OfTheWeights{}, LeastPowerOfTwo{23}, 2});
    REQUIRE(c.cache == Keep::Int8RowsRotated);
    REQUIRE(c.state == Keep::F16);
    REQUIRE(c.attention.has_value());
    REQUIRE(c.attention->queries == Taken{Quantized{Scheme{Row{}, LeastPowerOfTwo{23}, 2}}});
    REQUIRE(c.attention->keys_values == Taken{Kept{Keep::Int8RowsRotated}});
    REQUIRE(c.attention->weights ==
            Taken{Quantized{Scheme{Values{VALUE_BLOCK}, LeastPowerOfTwoOver255{}, 1}}});
    p.scaling = ActScaling::Sub32; // sub32 keeps its blocks of 32 for the query
    REQUIRE(contract(p).attention->queries == Taken{Quantized{Scheme{Values{32}, LeastPowerOfTwo{4}, 2}}});
}

TEST_CASE("every one of the 48 knob points has a contract of its own text") {
    std::set<std::string> texts;
    for (const EngineNumerics& p : all_points()) {
        const std::string t = to_string(contract(p));
        REQUIRE(t.find(to_string(p)) != std::string::npos);
        REQUIRE(t.find("accumulator bits: 64") != std::string::npos);
        texts.insert(t);
    }
    REQUIRE(all_points().size() == 48);
    REQUIRE(texts.size() == 48);
}

TEST_CASE("the contract's text states the router's order, ties and normalisations and the combine") {
    const std::string t = to_string(contract(EngineNumerics{}));
    for (const char* rule : {"ties to the lower expert index", "topk: w_i = p_i / S", "all:  w_i = p_i / Z",
                             "(ln N + 5) x 2^-24", "expert combine:"})
        REQUIRE(t.find(rule) != std::string::npos);
}

TEST_CASE("knob assignments parse in order and a malformed one is refused with a sentence") {
    std::vector<std::string> a{"cache=int8", "attention=array", "cache=f16"};
    EngineNumerics p = parse_point(a, "--knob");
    REQUIRE(p.cache == CacheFormat::F16);
    REQUIRE(p.attention == AttentionMath::Array);
    REQUIRE_THROWS_AS(parse_point(std::vector<std::string>{"cache"}, "--knob"), cardsim::Error);
    REQUIRE_THROWS_AS(parse_point(std::vector<std::string>{"cache=int9"}, "--knob"), cardsim::Error);
    REQUIRE_THROWS_AS(parse_point(std::vector<std::string>{"colour=red"}, "--knob"), cardsim::Error);
}

TEST_CASE("cardsim numerics prints the contract of the point its knobs name") {
    auto [code, out] = run_cardsim("numerics --knob cache=int8 --knob attention=array");
    REQUIRE(code == 0);
    EngineNumerics p;
    p.cache = CacheFormat::Int8;
    p.attention = AttentionMath::Array;
    REQUIRE(out == to_string(contract(p)));
    REQUIRE(run_cardsim("numerics --knob cache=int9").first == 2);
    REQUIRE(run_cardsim("numerics --sweep tanh").first == 2);
    auto [all_code, all] = run_cardsim("numerics --all");
    REQUIRE(all_code == 0);
    REQUIRE(all.find("scaling=per_block activations=two state=f16 cache=int8_hadamard attention=array") !=
            std::string::npos);
}

TEST_CASE("cardsim numerics --sweep checks a function against its reference and says so") {
    auto [code, out] = run_cardsim("numerics --sweep rsqrt --stride 65537 --threads 1");
    REQUIRE(code == 0);
    REQUIRE(out.find("0 not correctly rounded") != std::string::npos);
}
