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

bool ImageMemory::reads_through_file() const {
    auto* file = std::get_if<io::MappedFile>(&memory_);
    return file && file->reads_through_file();
}

void ImageMemory::read(std::uint64_t at, std::span<std::byte> out) const {
    if (auto* file = std::get_if<io::MappedFile>(&memory_)) return file->read(at, out);
    auto all = bytes();
    if (at > all.size() || out.size() > all.size() - at)
        throw Error("an image memory read runs past its end");
    std::memcpy(out.data(), all.data() + at, out.size());
}

void ChunkBytes::for_pieces(const std::function<void(std::span<const std::byte>)>& put) const {
    if (!memory_ || !memory_->reads_through_file()) return put(std::span<const std::byte>(*this));
    std::vector<std::byte> buffer(std::min<std::uint64_t>(length_, std::uint64_t{1} << 20));
    for (std::uint64_t at = 0; at < length_; at += buffer.size()) {
        const auto piece = std::span(buffer.data(), std::min<std::uint64_t>(buffer.size(), length_ - at));
        memory_->read(offset_ + at, piece);
        put(piece);
    }
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
