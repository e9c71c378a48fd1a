#pragma once
// A program ready to run: what the card executes (the program and the DDR image it runs on) and
// what the host needs to drive it (the io map of its host map).

#include "engine/program/image.hpp"
#include "engine/program/io_map.hpp"
#include "engine/program/program.hpp"

#include <string>

namespace cardsim::program {

/// A program, its DDR image and its io map: everything the card and its host use of a lowering.
struct Loaded {
    Program program;
    Image image;
    IoMap io;
};

/// A program and its image as read from their files, with the io map of its host map. Throws
/// cardsim::Error naming both files when the image's digest is not the one the program names.
Loaded load(Program program, Image image, const std::string& program_file, const std::string& image_file);

} // namespace cardsim::program
