// Request traces: cardsim's and Vidur's columns, errors that name the line and column, writing and
// reading back, and the Poisson generator's determinism and rate.

#include "engine/error.hpp"
#include "serve/generate.hpp"
#include "serve/request.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <fstream>

using namespace cardsim::serve;
using cardsim::test::ScratchDir;

namespace {

std::filesystem::path file(const ScratchDir& d, const std::string& text) {
    auto p = d / "trace.csv";
    std::ofstream(p) << text;
    return p;
}

std::string error_of(const std::filesystem::path& p) {
    try {
        read_requests(p);
    } catch (const cardsim::Error& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST_CASE("a cardsim trace reads with its ids and sorted by arrival") {
    ScratchDir d("serve-trace");
    auto reqs = read_requests(file(d, "arrival_s,prompt_tokens,output_tokens,prompt_ids\n"
                                      "0.5,2,3,4 5\n"
                                      "0.25,1,1,\n"));
    REQUIRE(reqs.size() == 2);
    CHECK(reqs[0].arrival_seconds == 0.25);
    CHECK(reqs[0].prompt_ids.empty());
    CHECK(reqs[1].prompt_ids == std::vector<std::uint32_t>{4, 5});
    CHECK(reqs[1].output_tokens == 3);
}

TEST_CASE("a Vidur trace reads by its column names") {
    ScratchDir d("serve-vidur");
    auto reqs =
        read_requests(file(d, "arrived_at,num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n"
                              "0.0,128,16,144,8.0\n"
                              "0.031,64.0,32,96,2.0\n"));
    REQUIRE(reqs.size() == 2);
    CHECK(reqs[1].arrival_seconds == 0.031);
    CHECK(reqs[1].prompt_tokens == 64);
    CHECK(reqs[1].output_tokens == 32);
}

TEST_CASE("a bad trace is refused naming the line and the column") {
    ScratchDir d("serve-bad");
    CHECK(error_of(file(d, "arrival,prompt_tokens,output_tokens\n0,1,1\n")).find("no column arrival_s") !=
          std::string::npos);
    auto e = error_of(file(d, "arrival_s,prompt_tokens,output_tokens\n0,1,1\n0.1,x,1\n"));
    CHECK(e.find("trace.csv:3: column prompt_tokens") != std::string::npos);
    CHECK(error_of(file(d, "arrival_s,prompt_tokens,output_tokens\n-1,1,1\n")).find("negative arrival") !=
          std::string::npos);
    CHECK(error_of(file(d, "arrival_s,prompt_tokens,output_tokens\n0,0,1\n")).find("token count") !=
          std::string::npos);
    CHECK(error_of(file(d, "arrival_s,prompt_tokens,output_tokens\n0,1\n")).find("2 fields") !=
          std::string::npos);
    CHECK(error_of(file(d, "arrival_s,prompt_tokens,output_tokens,prompt_ids\n0,2,1,7\n")).find("1 ids") !=
          std::string::npos);
    CHECK(error_of(file(d, "")).find("empty") != std::string::npos);
    CHECK(error_of(file(d, "arrival_s,prompt_tokens,output_tokens\n0,4,3,999,abc\n"))
              .find("trace.csv:2: the line has 5 fields, and the header names 3 columns") != std::string::npos);
    CHECK(error_of(d.path()).find("not a request trace file") != std::string::npos);
    CHECK(error_of(d / "nosuch.csv").find("nosuch.csv: no such file") != std::string::npos);
    // Past what the simulated time holds (femtoseconds in 63 bits): refused, not served as garbage.
    CHECK(error_of(file(d, "arrival_s,prompt_tokens,output_tokens\n0,4,3\n10000,4,3\n"))
              .find("trace.csv:3: column arrival_s") != std::string::npos);
    CHECK(error_of(file(d, "arrival_s,prompt_tokens,output_tokens\n0,4,3\n10000,4,3\n"))
              .find("past the 9000 s") != std::string::npos);
}

TEST_CASE("a written trace reads back the same") {
    ScratchDir d("serve-write");
    std::vector<Request> reqs{{0.125, 2, 3, {1, 2}}, {0.5, 1, 1, {9}}};
    write_requests(d / "t.csv", reqs);
    auto back = read_requests(d / "t.csv");
    REQUIRE(back.size() == 2);
    CHECK(back[0].arrival_seconds == 0.125);
    CHECK(back[1].prompt_ids == std::vector<std::uint32_t>{9});
    CHECK(d.files() == std::vector<std::string>{"t.csv"}); // no temporary left
}

TEST_CASE("poisson traces are deterministic and arrive at the rate asked") {
    PoissonSpec spec;
    spec.rate = 20;
    spec.count = 10000;
    spec.prompt = {8, 32};
    spec.output = {4, 4};
    auto a = poisson(spec), b = poisson(spec);
    REQUIRE(a.size() == 10000);
    CHECK(a.back().arrival_seconds == b.back().arrival_seconds);
    // The mean gap of n exponential gaps has a standard deviation of 1/(rate sqrt n): 0.5 % here;
    // five of them bound it.
    const double mean_gap = a.back().arrival_seconds / double(a.size());
    CHECK(std::abs(mean_gap * spec.rate - 1) < 0.05);
    std::size_t lo = 99, hi = 0;
    for (auto& r : a) {
        lo = std::min(lo, r.prompt_tokens);
        hi = std::max(hi, r.prompt_tokens);
        CHECK(r.output_tokens == 4);
    }
    CHECK(lo == 8);
    CHECK(hi == 32);
    spec.seed = 2;
    CHECK(poisson(spec).back().arrival_seconds != a.back().arrival_seconds);
    CHECK_THROWS_AS(parse_lengths("0", "--prompt-len"), cardsim::Error);
    CHECK_THROWS_AS(parse_lengths("9:3", "--prompt-len"), cardsim::Error);
    CHECK(parse_lengths("3:9", "--prompt-len").high == 9);
    spec.rate = 0;
    CHECK_THROWS_AS(poisson(spec), cardsim::Error);
}
