#include "engine/program/image_memory.hpp"

#include "engine/error.hpp"

#include <algorithm>
#include <cstring>

namespace cardsim::program {

std::shared_ptr<ImageMemory> ImageMemory::create(std::uint64_t bytes) {
    if (bytes == 0) return nullptr;
    return std::shared_ptr<ImageMemory>(new ImageMemory(kernels::HostMemory(bytes)));
}

std::shared_ptr<ImageMemory> ImageMemory::of(io::MappedFile file) {
    return std::shared_ptr<ImageMemory>(new ImageMemory(std::move(file)));
}

ChunkBytes::ChunkBytes(std::shared_ptr<ImageMemory> memory, std::uint64_t offset, std::uint64_t length)
    : memory_(std::move(memory)), offset_(offset), length_(length) {
    if (!memory_ || offset > memory_->bytes().size() || length > memory_->bytes().size() - offset)
        throw Error("an image chunk's bytes run past the image memory they are a range of");
}

bool operator==(const ChunkBytes& a, const ChunkBytes& b) {
    return a.size() == b.size() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

} // namespace cardsim::program
