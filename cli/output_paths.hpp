#pragma once
// The files and folders a command will write, checked before it does any work, and removed again
// when it fails: a command either writes every output it was asked for, or leaves nothing new.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace cardsim::cli {

/// The outputs of one command. `file` and `folder` check a path before the work starts (a file
/// path must not be a folder and its folder must exist and be writable; an existing file must be
/// writable; a folder path must be a folder or creatable in a writable parent) and throw
/// cardsim::Error naming the option, the path and what is wrong. Destroyed before `keep`, as when
/// the command fails with an exception, it removes every claimed path that did not exist when it
/// was claimed (and the temporaries beside it). A command keeps its outputs on success and on a
/// negative verdict (a trace of a run that is not bit-exact is what a person reads next).
class Outputs {
public:
    Outputs() = default;
    Outputs(const Outputs&) = delete;
    Outputs& operator=(const Outputs&) = delete;
    ~Outputs();

    /// Claims the file `path`, written for `option` (e.g. `--trace`).
    void file(std::string_view option, const std::filesystem::path& path);
    /// Claims the folder `path` (it may exist; its files are the command's own business).
    void folder(std::string_view option, const std::filesystem::path& path);
    /// The command succeeded (or gave its verdict): leave every output in place.
    void keep() { kept_ = true; }

private:
    struct Claim {
        std::filesystem::path path;
        bool existed = false;
        bool is_folder = false;
    };
    std::vector<Claim> claims_;
    bool kept_ = false;
};

} // namespace cardsim::cli
