// The safetensors reader: every rule of the format checked, each malformed file a cardsim::Error
// naming the file and the tensor; values of every dtype read exactly; views read the right rows.

#include "engine/error.hpp"
#include "models/checkpoint.hpp"
#include "models/safetensors.hpp"
#include "models/safetensors_writer.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstring>

using namespace cardsim;
using namespace cardsim::models;
using namespace cardsim::models::test;
using Catch::Matchers::Contains;

namespace {

/// A safetensors image: the declared header length (by default the header's own), the header, the data.
std::string image(const std::string& header, const std::string& data,
                  std::optional<std::uint64_t> declared = {}) {
    const std::uint64_t n = declared.value_or(header.size());
    std::string out(8, '\0');
    std::memcpy(out.data(), &n, 8);
    return out + header + data;
}

/// Writes `bytes` as `name` in `dir` and returns its path.
std::string put(const ScratchDir& dir, const std::string& name, const std::string& bytes) {
    const auto p = dir / name;
    write_file(p, bytes);
    return p.string();
}

/// Little-endian bytes of `v`.
template <class T>
std::string bytes_of(std::initializer_list<T> v) {
    std::string s;
    for (T x : v) {
        char b[sizeof(T)];
        std::memcpy(b, &x, sizeof(T));
        s.append(b, sizeof(T));
    }
    return s;
}

const std::string TWO = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";

} // namespace

TEST_CASE("a valid file reads its tensors, shapes and metadata", "[models][safetensors]") {
    ScratchDir d("st-valid");
    const std::string header =
        R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},)"
        R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    const auto p = put(d, "x.safetensors", image(header, bytes_of<float>({1.5f, -2.0f, 7.25f})));
    const auto f = SafetensorsFile::open(p);
    REQUIRE(f.tensors().size() == 2);
    CHECK(f.tensors()[0].name == "a"); // sorted by name
    CHECK(f.metadata().at("format") == "pt");
    const auto* a = f.find("a");
    REQUIRE(a);
    CHECK(a->shape == std::vector<std::size_t>{2});
    float v[2];
    std::memcpy(v, f.bytes(*a).data(), 8);
    CHECK(v[0] == 1.5f);
    CHECK(v[1] == -2.0f);
    CHECK(f.find("c") == nullptr);
}

TEST_CASE("a file shorter than its 8-byte header length is truncated", "[models][safetensors]") {
    ScratchDir d("st-short");
    const auto p = put(d, "short.safetensors", std::string("\x10\0\0", 3));
    REQUIRE_THROWS_AS(SafetensorsFile::open(p), Error);
    REQUIRE_THROWS_WITH(SafetensorsFile::open(p), Contains(p) && Contains("truncated"));
}

TEST_CASE("a header length past the end of the file is truncated", "[models][safetensors]") {
    ScratchDir d("st-len");
    const auto p = put(d, "len.safetensors", image(TWO, bytes_of<float>({1, 2, 3}), 100000));
    REQUIRE_THROWS_WITH(SafetensorsFile::open(p), Contains(p) && Contains("truncated") && Contains("100000"));
}

TEST_CASE("a header length over the limit is refused", "[models][safetensors]") {
    ScratchDir d("st-huge");
    const auto p = put(d, "huge.safetensors", image(TWO, bytes_of<float>({1, 2, 3}), std::uint64_t{1} << 40));
    REQUIRE_THROWS_WITH(SafetensorsFile::open(p), Contains(p) && Contains("exceeds the limit"));
}

TEST_CASE("tensor data cut short by the end of the file is an error naming the tensor",
          "[models][safetensors]") {
    ScratchDir d("st-trunc");
    const auto full = image(TWO, bytes_of<float>({1, 2, 3}));
    const auto p = put(d, "cut.safetensors", full.substr(0, full.size() - 2));
    REQUIRE_THROWS_WITH(SafetensorsFile::open(p), Contains(p) && Contains("`b`") && Contains("past the end"));
}

TEST_CASE("overlapping data offsets are an error naming both tensors", "[models][safetensors]") {
    ScratchDir d("st-overlap");
    const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                               R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
    const auto p = put(d, "o.safetensors", image(header, bytes_of<float>({1, 2, 3})));
    REQUIRE_THROWS_WITH(SafetensorsFile::open(p),
                        Contains(p) && Contains("`b`") && Contains("overlap") && Contains("`a`"));
}

TEST_CASE("a hole between tensors' data is an error", "[models][safetensors]") {
    ScratchDir d("st-hole");
    const std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                               R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
    const auto p = put(d, "h.safetensors", image(header, bytes_of<float>({1, 2, 3})));
    REQUIRE_THROWS_WITH(SafetensorsFile::open(p),
                        Contains(p) && Contains("`b`") && Contains("hole of 4 bytes"));
}

TEST_CASE("bytes after the last tensor are an error", "[models][safetensors]") {
    ScratchDir d("st-trail");
    const auto p = put(d, "t.safetensors", image(TWO, bytes_of<float>({1, 2, 3, 4})));
    REQUIRE_THROWS_WITH(SafetensorsFile::open(p), Contains(p) && Contains("4 bytes follow the last tensor"));
}

TEST_CASE("a byte length unlike shape times dtype size is an error naming the tensor",
          "[models][safetensors]") {
    ScratchDir d("st-bytes");
    const std::string header = R"({"w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,8]}})";
    const auto p = put(d, "w.safetensors", image(header, std::string(8, '\0')));
    REQUIRE_THROWS_WITH(SafetensorsFile::open(p),
                        Contains(p) && Contains("`w`") && Contains("holds 8 bytes") && Contains("needs 12"));
}

TEST_CASE("a tensor named twice is an error naming it", "[models][safetensors]") {
    ScratchDir d("st-dup");
    const std::string header = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                               R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
    const auto p = put(d, "dup.safetensors", image(header, bytes_of<float>({1, 2})));
    REQUIRE_THROWS_WITH(SafetensorsFile::open(p), Contains(p) && Contains("`w` appears twice"));
}

TEST_CASE("an unknown dtype is an error naming the tensor and the dtype", "[models][safetensors]") {
    ScratchDir d("st-dtype");
    const std::string header = R"({"w":{"dtype":"F12","shape":[1],"data_offsets":[0,4]}})";
    const auto p = put(d, "dt.safetensors", image(header, bytes_of<float>({1})));
    REQUIRE_THROWS_WITH(SafetensorsFile::open(p),
                        Contains(p) && Contains("`w`") && Contains("unknown dtype `F12`"));
}

TEST_CASE("headers that are not valid JSON objects are errors", "[models][safetensors]") {
    ScratchDir d("st-json");
    const std::string data = bytes_of<float>({1});
    auto open = [&](const std::string& name, const std::string& header) {
        return SafetensorsFile::open(put(d, name, image(header, data)));
    };
    REQUIRE_THROWS_WITH(open("a.safetensors", R"({"w":{"dtype":"F32",)"),
                        Contains("a.safetensors") && Contains("invalid JSON"));
    REQUIRE_THROWS_WITH(open("b.safetensors", "[1, 2, 3]   "),
                        Contains("b.safetensors") && Contains("not a JSON object"));
    REQUIRE_THROWS_WITH(
        open("c.safetensors", "{\"w\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}"),
        Contains("c.safetensors") && Contains("invalid JSON"));
    REQUIRE_THROWS_WITH(open("d.safetensors", R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})"),
                        Contains("`w`") && Contains("shape entry"));
    REQUIRE_THROWS_WITH(open("e.safetensors", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})"),
                        Contains("`w`") && Contains("end before they begin"));
    REQUIRE_THROWS_WITH(open("f.safetensors", R"({"w":{"shape":[1],"data_offsets":[0,4]}})"),
                        Contains("`w`") && Contains("no `dtype`"));
    REQUIRE_THROWS_WITH(open("g.safetensors", R"({"w":{"dtype":"F32","shape":[1]}})"),
                        Contains("`w`") && Contains("data_offsets"));
    REQUIRE_THROWS_WITH(open("h.safetensors", R"({"w":7})"), Contains("`w`") && Contains("not an object"));
    REQUIRE_THROWS_WITH(
        open("i.safetensors",
             R"({"__metadata__":{"k":1},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})"),
        Contains("`__metadata__` entry `k`"));
}

TEST_CASE("every dtype's stored bits read as their exact values", "[models][safetensors]") {
    ScratchDir d("st-dtypes");
    std::string data;
    std::string header = "{";
    std::size_t at = 0;
    auto add = [&](const char* name, const char* dtype, std::size_t n, const std::string& bytes) {
        header += fmt::format(R"({}"{}":{{"dtype":"{}","shape":[{}],"data_offsets":[{},{}]}})", at ? "," : "",
                              name, dtype, n, at, at + bytes.size());
        at += bytes.size();
        data += bytes;
    };
    add("bf16", "BF16", 3, bytes_of<std::uint16_t>({0x3f80, 0xc040, 0x0001}));
    add("f16", "F16", 4, bytes_of<std::uint16_t>({0x3c00, 0x0001, 0xfc00, 0x3555}));
    add("f32", "F32", 1, bytes_of<float>({0.1f}));
    add("f64", "F64", 1, bytes_of<double>({0.1}));
    add("i8", "I8", 2, bytes_of<std::int8_t>({-1, 127}));
    add("u8", "U8", 1, bytes_of<std::uint8_t>({255}));
    add("i32", "I32", 1, bytes_of<std::int32_t>({-5}));
    add("e4m3", "F8_E4M3", 2, bytes_of<std::uint8_t>({0x7e, 0x01}));
    add("e5m2", "F8_E5M2", 1, bytes_of<std::uint8_t>({0x7b}));
    add("e8m0", "F8_E8M0", 2, bytes_of<std::uint8_t>({0x7f, 0x80}));
    header += "}";
    const auto dir = d / "ck";
    std::filesystem::create_directories(dir);
    write_file(dir / "config.json", "{}");
    write_file(dir / "model.safetensors", image(header, data));
    const auto c = Checkpoint::open(dir);
    auto v = [&](const char* name) { return c.values(c.require(name), cardsim::graph::Whole{}); };
    CHECK(v("bf16") == std::vector<double>{1.0, -3.0, std::ldexp(1.0, -133)});
    const auto f16 = v("f16");
    CHECK(f16[0] == 1.0);
    CHECK(f16[1] == std::ldexp(1.0, -24));
    CHECK(f16[2] == -INFINITY);
    CHECK(f16[3] == 1.0 / 4 + 0x155 * std::ldexp(1.0, -12)); // 0x3555: exponent 13 - 15, mantissa 0x155
    CHECK(v("f32")[0] == static_cast<double>(0.1f));
    CHECK(v("f64")[0] == 0.1);
    CHECK(v("i8") == std::vector<double>{-1, 127});
    CHECK(v("u8") == std::vector<double>{255});
    CHECK(v("i32") == std::vector<double>{-5});
    CHECK(v("e4m3") == std::vector<double>{448, std::ldexp(1.0, -9)});
    CHECK(v("e5m2") == std::vector<double>{57344});
    CHECK(v("e8m0") == std::vector<double>{1, 2});
    std::vector<float> f(3);
    c.read_f32(c.require("bf16"), cardsim::graph::Whole{}, f);
    CHECK(f[1] == -3.0f);
}

TEST_CASE("views read the rows they name and refuse rows the tensor lacks", "[models][safetensors]") {
    ScratchDir d("st-views");
    // t: 6 rows of 2, element (r, c) = 10 r + c.
    std::vector<double> t;
    for (int r = 0; r < 6; ++r)
        for (int c = 0; c < 2; ++c)
            t.push_back(10 * r + c);
    std::filesystem::create_directories(d / "ck");
    write_file(d / "ck" / "config.json", "{}");
    write_safetensors(d / "ck" / "model.safetensors", {{"t", Dtype::F32, {6, 2}}}, {t});
    const auto c = Checkpoint::open(d / "ck");
    const auto w = c.require("t");
    using namespace cardsim::graph;
    CHECK(c.values(w, RowRange{2, 3}) == std::vector<double>{20, 21, 30, 31, 40, 41});
    // Heads of 3 rows: the second and third row of each head.
    CHECK(c.values(w, HeadPart{3, 1, 2}) == std::vector<double>{10, 11, 20, 21, 40, 41, 50, 51});
    CHECK(c.view_of(w, HeadPart{3, 1, 2}) == graph::ViewShape{4, 2});
    REQUIRE_THROWS_WITH(c.values(w, RowRange{5, 2}),
                        Contains("model.safetensors") && Contains("`t`") && Contains("rows 5..7"));
    REQUIRE_THROWS_WITH(c.values(w, HeadPart{4, 0, 2}), Contains("`t`") && Contains("does not divide"));
    REQUIRE_THROWS_WITH(c.values(w, HeadPart{3, 2, 2}), Contains("`t`") && Contains("stride of 3"));
    std::vector<float> f(12);
    REQUIRE_THROWS_WITH(c.read_f32(w, RowRange{6, 1}, f), Contains("`t`") && Contains("rows 6..7"));
    REQUIRE_THROWS_WITH(c.read_f32(99, Whole{}, f), Contains("weight 99 does not exist"));
    std::vector<double> small(3);
    REQUIRE_THROWS_WITH(c.read_f64(w, Whole{}, small), Contains("`t`") && Contains("12 elements"));
}

TEST_CASE("a checkpoint directory needs config.json and exactly one of a file or an index",
          "[models][safetensors]") {
    ScratchDir d("ck-layout");
    const auto dir = d / "ck";
    std::filesystem::create_directories(dir);
    REQUIRE_THROWS_WITH(Checkpoint::open(dir), Contains("no config.json"));
    write_file(dir / "config.json", "{\"a\": 1,}");
    REQUIRE_THROWS_WITH(Checkpoint::open(dir), Contains("config.json") && Contains("invalid JSON"));
    write_file(dir / "config.json", "[]");
    REQUIRE_THROWS_WITH(Checkpoint::open(dir), Contains("config.json") && Contains("not a JSON object"));
    write_file(dir / "config.json", "{}");
    REQUIRE_THROWS_WITH(Checkpoint::open(dir), Contains("neither model.safetensors nor"));
    write_file(dir / "model.safetensors", image(TWO, bytes_of<float>({1, 2, 3})));
    CHECK(Checkpoint::open(dir).tensor_count() == 2);
    write_file(dir / "model.safetensors.index.json", R"({"weight_map":{}})");
    REQUIRE_THROWS_WITH(Checkpoint::open(dir), Contains("both"));
    REQUIRE_THROWS_WITH(Checkpoint::open(d / "nothing"), Contains("not a directory"));
}

TEST_CASE("a sharded checkpoint's index must agree with its shards", "[models][safetensors]") {
    ScratchDir d("ck-shards");
    const auto dir = d / "ck";
    std::filesystem::create_directories(dir);
    write_file(dir / "config.json", "{}");
    write_file(dir / "s1.safetensors",
               image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", bytes_of<float>({1})));
    write_file(dir / "s2.safetensors",
               image(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", bytes_of<float>({2})));
    write_file(dir / "s3.safetensors",
               image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", bytes_of<float>({3})));
    const auto index = dir / "model.safetensors.index.json";
    auto with = [&](const std::string& map) {
        write_file(index, R"({"metadata":{},"weight_map":)" + map + "}");
    };

    with(R"({"a":"s1.safetensors","b":"s2.safetensors"})");
    const auto c = Checkpoint::open(dir);
    CHECK(c.tensor_count() == 2);
    CHECK(c.values(c.require("b"), cardsim::graph::Whole{})[0] == 2.0);
    CHECK(c.files().size() == 2);

    with(R"({"a":"s1.safetensors","b":"s1.safetensors"})");
    REQUIRE_THROWS_WITH(Checkpoint::open(dir), Contains("`b`") && Contains("does not hold it"));
    with(R"({"a":"s1.safetensors","b":"s4.safetensors"})");
    REQUIRE_THROWS_WITH(Checkpoint::open(dir),
                        Contains("`b`") && Contains("`s4.safetensors` does not exist"));
    with(R"({"b":"s2.safetensors","a":"s1.safetensors","c":"s3.safetensors"})");
    REQUIRE_THROWS_WITH(Checkpoint::open(dir), Contains("`c`") && Contains("does not hold it"));
    // s4 holds `a` and `c`; the index puts `a` in s3 too.
    write_file(
        dir / "s4.safetensors",
        image(
            R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"c":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
            bytes_of<float>({1, 2})));
    with(R"({"a":"s3.safetensors","b":"s2.safetensors","c":"s4.safetensors"})");
    REQUIRE_THROWS_WITH(Checkpoint::open(dir), Contains("`a`") && Contains("two shards"));
    with(R"({"a":"s1.safetensors"})");
    write_file(
        dir / "s1.safetensors",
        image(
            R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"z":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
            bytes_of<float>({1, 2})));
    REQUIRE_THROWS_WITH(Checkpoint::open(dir), Contains("`z`") && Contains("does not list it"));
    with(R"({"a":"../s1.safetensors"})");
    REQUIRE_THROWS_WITH(Checkpoint::open(dir), Contains("not a file name inside the checkpoint"));
    write_file(index, R"({"weights":{}})");
    REQUIRE_THROWS_WITH(Checkpoint::open(dir), Contains("no `weight_map`"));
    with(R"({"a":"s1.safetensors","a":"s1.safetensors"})");
    REQUIRE_THROWS_WITH(Checkpoint::open(dir), Contains("index.json") && Contains("appears twice"));
}

TEST_CASE("the writer's files read back bit for bit, bf16 rounded to nearest even", "[models][safetensors]") {
    ScratchDir d("st-write");
    const std::vector<double> v{1.0, 1.0 + 1.0 / 256, 1.0 + 3.0 / 256, -0.1, 65504.0};
    write_safetensors(d / "w.safetensors",
                      {{"b", Dtype::BF16, {5}}, {"h", Dtype::F16, {5}}, {"f", Dtype::F32, {5}}}, {v, v, v},
                      {{"k", "v"}});
    const auto f = SafetensorsFile::open(d / "w.safetensors");
    CHECK(f.metadata().at("k") == "v");
    auto read = [&](const char* n) {
        const auto* t = f.find(n);
        std::vector<double> out;
        for (std::size_t i = 0; i < t->numel(); ++i)
            out.push_back(to_double(t->dtype, f.bytes(*t).data() + i * size_of(t->dtype)));
        return out;
    };
    // bf16 keeps 8 significand bits: 1 + 1/256 is a tie and rounds to even (1), 1 + 3/256 rounds up.
    const auto b = read("b");
    CHECK(b[0] == 1.0);
    CHECK(b[1] == 1.0);
    CHECK(b[2] == 1.0 + 4.0 / 256);
    CHECK(read("h")[4] == 65504.0);
    CHECK(read("f")[3] == static_cast<double>(-0.1f));
    // The header is padded to a multiple of 8 and the data follows it.
    const auto bytes = read_file(d / "w.safetensors");
    std::uint64_t n;
    std::memcpy(&n, bytes.data(), 8);
    CHECK(n % 8 == 0);
    CHECK(bytes.size() == 8 + n + 5 * (2 + 2 + 4));
}
