#include "models/safetensors_writer.hpp"

#include "engine/error.hpp"
#include "engine/io/positional.hpp"

#include <boost/json.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace cardsim::models {

SafetensorsPlan::SafetensorsPlan(std::vector<TensorToWrite> tensors,
                                 std::map<std::string, std::string> metadata)
    : tensors_(std::move(tensors)) {
    boost::json::object h;
    if (!metadata.empty()) {
        boost::json::object m;
        for (auto& [k, v] : metadata)
            m[k] = v;
        h["__metadata__"] = std::move(m);
    }
    std::size_t at = 0;
    for (const auto& t : tensors_) {
        std::size_t n = 1;
        for (auto d : t.shape)
            n *= d;
        const std::size_t end = at + n * size_of(t.dtype);
        offsets_.emplace_back(at, end);
        boost::json::array shape;
        for (auto d : t.shape)
            shape.push_back(static_cast<std::uint64_t>(d));
        h[t.name] =
            boost::json::object{{"dtype", std::string(name(t.dtype))},
                                {"shape", std::move(shape)},
                                {"data_offsets", boost::json::array{static_cast<std::uint64_t>(at),
                                                                    static_cast<std::uint64_t>(end)}}};
        at = end;
    }
    header_ = boost::json::serialize(h);
    header_.append((8 - header_.size() % 8) % 8, ' ');
}

std::size_t SafetensorsPlan::file_size() const {
    return data_start() + (offsets_.empty() ? 0 : offsets_.back().second);
}

namespace {

/// Writes all of `bytes` at `offset` of `fd`.
void write_at(int fd, const void* bytes, std::size_t size, std::size_t offset, const std::string& path) {
    if (!io::write_at(fd, offset, std::span(static_cast<const std::byte*>(bytes), size)))
        throw Error(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
}

/// One chunk of work: elements `first .. first + count` of tensor `tensor`.
struct Chunk {
    std::size_t tensor, first, count;
};

constexpr std::size_t CHUNK_ELEMENTS = std::size_t{1} << 20;

} // namespace

void write_safetensors(const std::filesystem::path& path, const SafetensorsPlan& plan, const FillTensor& fill,
                       unsigned threads) {
    const std::string temp = path.string() + fmt::format(".tmp{}", ::getpid());
    const int fd = ::open(temp.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) throw Error(fmt::format("{}: cannot create: {}", temp, std::strerror(errno)));
    try {
        std::uint64_t n = plan.header().size();
        write_at(fd, &n, 8, 0, temp);
        write_at(fd, plan.header().data(), plan.header().size(), 8, temp);
        std::vector<Chunk> chunks;
        for (std::size_t i = 0; i < plan.tensors().size(); ++i) {
            const auto [b, e] = plan.offsets(i);
            const std::size_t count = (e - b) / size_of(plan.tensors()[i].dtype);
            for (std::size_t first = 0; first < count; first += CHUNK_ELEMENTS)
                chunks.push_back({i, first, std::min(CHUNK_ELEMENTS, count - first)});
        }
        std::atomic<std::size_t> next{0};
        std::mutex error_mutex;
        std::string error;
        auto work = [&] {
            std::vector<std::byte> buffer;
            for (std::size_t c = next++; c < chunks.size(); c = next++) {
                const Chunk& ch = chunks[c];
                const std::size_t es = size_of(plan.tensors()[ch.tensor].dtype);
                buffer.resize(ch.count * es);
                try {
                    fill(ch.tensor, ch.first, ch.count, buffer);
                    write_at(fd, buffer.data(), buffer.size(),
                             plan.data_start() + plan.offsets(ch.tensor).first + ch.first * es, temp);
                } catch (const std::exception& e) {
                    std::lock_guard lock(error_mutex);
                    if (error.empty()) error = e.what();
                    next = chunks.size();
                }
            }
        };
        std::vector<std::jthread> pool;
        for (unsigned t = 1; t < std::max(1u, threads); ++t)
            pool.emplace_back(work);
        work();
        pool.clear();
        if (!error.empty()) throw Error(error);
    } catch (...) {
        ::close(fd);
        ::unlink(temp.c_str());
        throw;
    }
    if (::close(fd) != 0) {
        ::unlink(temp.c_str());
        throw Error(fmt::format("{}: cannot close: {}", temp, std::strerror(errno)));
    }
    std::error_code ec;
    std::filesystem::rename(temp, path, ec);
    if (ec) {
        ::unlink(temp.c_str());
        throw Error(fmt::format("{}: cannot rename into place: {}", path.string(), ec.message()));
    }
}

void store_element(Dtype d, double x, std::byte* out) {
    auto put = [&](auto v) { std::memcpy(out, &v, sizeof v); };
    auto integer = [&](double lo, double hi) { return std::clamp(std::nearbyint(x), lo, hi); };
    switch (d) {
    case Dtype::F32:
        return put(static_cast<float>(x));
    case Dtype::F64:
        return put(x);
    case Dtype::F16:
        return put(float_to_half(static_cast<float>(x)));
    case Dtype::BF16:
        return put(float_to_bf16(static_cast<float>(x)));
    case Dtype::Bool:
        return put(static_cast<std::uint8_t>(x != 0));
    case Dtype::U8:
        return put(static_cast<std::uint8_t>(integer(0, 255)));
    case Dtype::I8:
        return put(static_cast<std::int8_t>(integer(-128, 127)));
    case Dtype::I16:
        return put(static_cast<std::int16_t>(integer(-32768, 32767)));
    case Dtype::U16:
        return put(static_cast<std::uint16_t>(integer(0, 65535)));
    case Dtype::I32:
        return put(static_cast<std::int32_t>(integer(-2147483648.0, 2147483647.0)));
    case Dtype::U32:
        return put(static_cast<std::uint32_t>(integer(0, 4294967295.0)));
    case Dtype::I64:
        return put(static_cast<std::int64_t>(integer(-9.2e18, 9.2e18)));
    case Dtype::U64:
        return put(static_cast<std::uint64_t>(integer(0, 1.8e19)));
    case Dtype::F8_E4M3:
    case Dtype::F8_E5M2:
    case Dtype::F8_E8M0: {
        // Nearest code by search (256 candidates): only used for small test files.
        std::uint8_t best = 0;
        double err = INFINITY;
        for (unsigned c = 0; c < 256; ++c) {
            const auto b = static_cast<std::byte>(c);
            const double v = to_double(d, &b);
            if (std::isfinite(v) && std::fabs(v - x) < err)
                err = std::fabs(v - x), best = static_cast<std::uint8_t>(c);
        }
        return put(best);
    }
    }
}

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::vector<std::vector<double>>& values,
                       const std::map<std::string, std::string>& metadata) {
    SafetensorsPlan plan(tensors, metadata);
    write_safetensors(
        path, plan,
        [&](std::size_t t, std::size_t first, std::size_t count, std::span<std::byte> out) {
            const std::size_t es = size_of(tensors[t].dtype);
            for (std::size_t j = 0; j < count; ++j)
                store_element(tensors[t].dtype, values.at(t).at(first + j), out.data() + j * es);
        },
        1);
}

} // namespace cardsim::models
