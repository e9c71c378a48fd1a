#include "engine/program/loaded.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

namespace cardsim::program {

Loaded load(Program program, Image image, const std::string& program_file, const std::string& image_file) {
    auto d = digest(image);
    if (d != program.image_digest)
        throw Error(
            fmt::format("{}: the image's digest is {:016x}, but {} runs on the image with digest {:016x} "
                        "(the image is damaged, or belongs to another program)",
                        image_file, d, program_file, program.image_digest));
    Loaded l;
    l.io = io_map(program.host);
    l.program = std::move(program);
    l.image = std::move(image);
    return l;
}

} // namespace cardsim::program
