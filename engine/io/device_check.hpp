#pragma once
// Input files are files: a device (/dev/zero, /dev/urandom) would be read for ever.

#include "engine/error.hpp"

#include <fmt/core.h>

#include <filesystem>

namespace cardsim::io {

/// Throws a cardsim::Error naming `path` when it is a character or block device, which an input
/// read to its end never finishes (a pipe or a regular file is taken).
inline void refuse_device(const std::filesystem::path& path) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!ec && (status.type() == std::filesystem::file_type::character ||
                status.type() == std::filesystem::file_type::block))
        throw Error(fmt::format("cannot read `{}`: it is a device, expected a file", path.string()));
}

} // namespace cardsim::io
