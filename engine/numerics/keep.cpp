#include "engine/numerics/keep.hpp"

#include "engine/error.hpp"
#include "engine/numerics/hadamard.hpp"
#include "engine/numerics/rounding.hpp"
#include "engine/numerics/weights.hpp"

#include <bit>
#include <cstring>
#include <limits>
#include <string>

namespace cardsim::numerics {

std::string_view name(Keep k) {
    switch (k) {
    case Keep::F32:
        return "F32";
    case Keep::F16:
        return "F16";
    case Keep::Int8Rows:
        return "Int8Rows";
    case Keep::Int8RowsRotated:
        return "Int8RowsRotated";
    }
    return "?";
}

std::size_t kept_bytes(Keep k, std::size_t n) {
    switch (k) {
    case Keep::F32:
        return 4 * n;
    case Keep::F16:
        return 2 * n;
    default:
        return 2 + n;
    }
}

void keep_row(std::span<const float> x, Keep k, std::span<std::byte> out) {
    if (out.size() != kept_bytes(k, x.size()))
        throw Error("keep " + std::string(name(k)) + ": a row of " + std::to_string(x.size()) +
                    " values takes " + std::to_string(kept_bytes(k, x.size())) + " bytes, the output has " +
                    std::to_string(out.size()));
    switch (k) {
    case Keep::F32:
        for (std::size_t j = 0; j < x.size(); ++j) {
            const auto u = std::bit_cast<std::uint32_t>(x[j]);
            for (int b = 0; b < 4; ++b)
                out[4 * j + b] = static_cast<std::byte>(u >> (8 * b));
        }
        return;
    case Keep::F16:
        for (std::size_t j = 0; j < x.size(); ++j) {
            const F16 h = to_f16(x[j]);
            out[2 * j] = static_cast<std::byte>(h.bits & 0xFF);
            out[2 * j + 1] = static_cast<std::byte>(h.bits >> 8);
        }
        return;
    case Keep::Int8Rows:
    case Keep::Int8RowsRotated: {
        std::vector<float> rotated;
        std::span<const float> v = x;
        if (k == Keep::Int8RowsRotated) {
            rotated.assign(x.begin(), x.end());
            hadamard(rotated);
            v = rotated;
        }
        std::vector<std::int8_t> codes(v.size());
        const F16 d = quantize_f16_group(v, 127, codes);
        out[0] = static_cast<std::byte>(d.bits & 0xFF);
        out[1] = static_cast<std::byte>(d.bits >> 8);
        std::memcpy(out.data() + 2, codes.data(), codes.size());
        return;
    }
    }
}

std::vector<std::byte> keep_row(std::span<const float> x, Keep k) {
    std::vector<std::byte> out(kept_bytes(k, x.size()));
    keep_row(x, k, out);
    return out;
}

Int8Row int8_row(std::span<const std::byte> bytes, std::size_t n) {
    if (bytes.size() != 2 + n)
        throw Error("an int8 row of " + std::to_string(n) + " values takes " + std::to_string(2 + n) +
                    " bytes, found " + std::to_string(bytes.size()));
    const auto bits = static_cast<std::uint16_t>(static_cast<std::uint8_t>(bytes[0]) |
                                                 static_cast<std::uint8_t>(bytes[1]) << 8);
    return {F16{bits},
            std::span<const std::int8_t>(reinterpret_cast<const std::int8_t*>(bytes.data() + 2), n)};
}

void read_row(std::span<const std::byte> bytes, Keep k, std::span<float> out) {
    if (bytes.size() != kept_bytes(k, out.size()))
        throw Error("keep " + std::string(name(k)) + ": a row of " + std::to_string(out.size()) +
                    " values takes " + std::to_string(kept_bytes(k, out.size())) + " bytes, found " +
                    std::to_string(bytes.size()));
    const auto byte = [&](std::size_t i) {
        return static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[i]));
    };
    switch (k) {
    case Keep::F32:
        for (std::size_t j = 0; j < out.size(); ++j)
            out[j] = std::bit_cast<float>(byte(4 * j) | byte(4 * j + 1) << 8 | byte(4 * j + 2) << 16 |
                                          byte(4 * j + 3) << 24);
        return;
    case Keep::F16:
        for (std::size_t j = 0; j < out.size(); ++j)
            out[j] = to_f32(F16{static_cast<std::uint16_t>(byte(2 * j) | byte(2 * j + 1) << 8)});
        return;
    default: {
        const Int8Row row = int8_row(bytes, out.size());
        if (is_nonfinite(row.scale)) {
            std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
            return;
        }
        const F16Parts d = parts(row.scale);
        for (std::size_t j = 0; j < out.size(); ++j) {
            const long long v = static_cast<long long>(row.codes[j]) * d.significand; // < 2^18: exact
            out[j] = round_to_f32(v < 0, static_cast<unsigned __int128>(v < 0 ? -v : v), d.exponent);
        }
        return;
    }
    }
}

void keep_values(std::span<float> x, Keep k) {
    if (k == Keep::F16)
        for (float& v : x)
            v = to_f32(to_f16(v));
    else if (k != Keep::F32)
        throw Error("keep " + std::string(name(k)) + ": values are kept one by one only as F32 or F16");
}

} // namespace cardsim::numerics
