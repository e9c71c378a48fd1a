#pragma once
// A Hugging Face checkpoint directory: `config.json` plus `model.safetensors`, or shards listed by
// `model.safetensors.index.json`. Every tensor of every shard gets one index (graph::W), in name
// order, and is read through the shard's memory map.

#include "engine/graph/weight_source.hpp"
#include "models/safetensors.hpp"

#include <boost/json/object.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cardsim::models {

/// The file name of a one-file checkpoint.
inline constexpr std::string_view SINGLE_FILE = "model.safetensors";
/// The file name of a sharded checkpoint's index.
inline constexpr std::string_view INDEX_FILE = "model.safetensors.index.json";
/// The file name of the model's configuration.
inline constexpr std::string_view CONFIG_FILE = "config.json";

/// An opened, validated checkpoint. Movable and cheap to copy (shard maps are shared).
class Checkpoint final : public graph::WeightSource {
public:
    /// Opens `dir`: parses config.json (an object), maps and validates every safetensors file, and
    /// for a sharded checkpoint checks the index against the shards (each listed tensor in its file,
    /// each file's tensors listed for that file, no name in two files). Having both a single file and
    /// an index, or neither, is an error. Throws cardsim::Error naming the file and tensor.
    static Checkpoint open(const std::filesystem::path& dir);
    /// Opens `dir` for its config.json alone (safetensors files, if any, are not read): a
    /// shapes-only checkpoint, which holds no tensors until `declare` gives them. Throws
    /// cardsim::Error naming the directory or config.json.
    static Checkpoint open_config(const std::filesystem::path& dir);
    /// Whether `dir` holds weights (a single safetensors file or an index).
    static bool has_weights(const std::filesystem::path& dir);

    /// Gives a shapes-only checkpoint its tensors (names, shapes and the dtype they would be
    /// stored in: what its config.json implies). Reading any of their values is an error saying the
    /// checkpoint has no weights; names, shapes and views work as for a checkpoint with weights.
    void declare(std::vector<TensorInfo> tensors);
    /// Whether this checkpoint has shapes only (config.json, no weights).
    bool shapes_only() const { return shapes_only_; }

    /// The directory, as given.
    const std::filesystem::path& dir() const { return dir_; }
    /// config.json's path, for error messages.
    const std::string& config_path() const { return config_path_; }
    /// config.json's top-level object.
    const boost::json::object& config() const { return config_; }
    /// The safetensors files, in the order they were opened.
    std::vector<std::string> files() const;

    /// The index of the tensor called `name`, or nothing.
    std::optional<graph::W> find(std::string_view name) const;
    /// The index of the tensor called `name`; throws cardsim::Error naming the checkpoint if absent.
    graph::W require(std::string_view name) const;
    /// The header entry of tensor `w`.
    const TensorInfo& info(graph::W w) const;
    /// The file holding tensor `w`.
    const std::string& file_of(graph::W w) const;
    /// The stored bytes of tensor `w`.
    std::span<const std::byte> bytes(graph::W w) const;
    /// The total element count over all tensors.
    std::size_t parameter_count() const;

    std::size_t tensor_count() const override { return entries_.size(); }
    const std::string& name(graph::W w) const override { return info(w).name; }
    std::span<const std::size_t> shape(graph::W w) const override { return info(w).shape; }
    /// The stored element type of tensor `w`.
    Dtype dtype(graph::W w) const { return info(w).dtype; }
    /// The elements `view` reads of tensor `w`, in double (exact for every dtype but 64-bit
    /// integers beyond 2^53).
    std::vector<double> values(graph::W w, const graph::View& view) const;
    void read_f32(graph::W w, const graph::View& view, std::span<float> out) const override;
    void read_f64(graph::W w, const graph::View& view, std::span<double> out) const override;
    /// Rows [first, first + count) of the view, converted straight from the mapped bytes.
    void read_rows_f32(graph::W w, const graph::View& view, std::size_t first, std::size_t count,
                       std::span<float> out) const override;
    /// Drops tensor `w`'s mapped pages from memory (madvise DONTNEED on the pages it covers; they
    /// are read from the file again when touched).
    void release(graph::W w) const override;

private:
    struct Entry {
        std::size_t file;   ///< index into files_, or npos for a declared tensor
        std::size_t tensor; ///< index into that file's tensors(), or into declared_
    };
    /// Calls `row(view row, stored bytes of its row, row length)` for every row `view` reads of `w`,
    /// after checking that `out_size` elements are wanted.
    /// The shape `view` reads of tensor `w`; a cardsim::Error naming the file, tensor and view if it
    /// does not fit.
    graph::ViewShape checked_view(graph::W w, const graph::View& view) const;
    /// The name of the tensor `e` points at.
    const std::string& entry_name(const Entry& e) const { return tensor_of(e).name; }
    /// The header entry `e` points at.
    const TensorInfo& tensor_of(const Entry& e) const {
        return e.file == npos ? declared_[e.tensor] : files_[e.file].tensors()[e.tensor];
    }
    static constexpr std::size_t npos = std::size_t(-1);
    /// Calls `row(index from first, stored bytes of its row, row length)` for the view rows
    /// [first, first + count) of `w` (all of them when `count` is npos), after checking that
    /// `out_size` elements are wanted.
    template <class Row>
    void read(graph::W w, const graph::View& view, std::size_t out_size, Row row, std::size_t first = 0,
              std::size_t count = npos) const;

    std::filesystem::path dir_;
    std::string config_path_;
    boost::json::object config_;
    std::vector<SafetensorsFile> files_;
    std::vector<Entry> entries_; ///< sorted by name
    bool shapes_only_ = false;
    std::vector<TensorInfo> declared_; ///< a shapes-only checkpoint's tensors (Entry::file = npos)
};

} // namespace cardsim::models
