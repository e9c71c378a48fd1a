// doc_check: holds the Markdown pages (README.md, docs/*.md) to the binary and to each other.
//
//   doc_check examples PAGE CARDSIM SOURCE_DIR [--update]
//       runs every command of the page's ```console blocks and checks the output lines it quotes
//   doc_check links PAGE...
//       checks that every relative link of the pages names an existing file, and heading anchor
//   doc_check lines PAGE MAX
//       checks that the page has at most MAX lines (the README is a front page, not a manual)
//
// The convention of a ```console block (docs/testing.md, "Doc examples"):
//   - `$ COMMAND` is a command, run with bash in the page's scratch directory (commands of one
//     page share it, in order, so a model one makes is there for the next); `cardsim` is the
//     binary under test. `$ COMMAND   # exit N` expects exit code N (default 0).
//   - the lines after a command, up to the next command or the end of the block, are quoted
//     output: each must be a line the command printed (stdout and stderr), in the order quoted,
//     lines between them skipped. `...` inside a quoted line stands for any text; a line that is
//     only `...` says lines are left out and matches nothing.
//   - ```console rtl: a block that needs the RTL model; skipped (and said so) in a build without
//     Verilator.
// A `cardsim ...` command line in any other fenced block fails the check: concrete examples go in
// console blocks, so each runs. With --update, a quoted line that matches no printed line is
// replaced by the first printed line after the previous match that starts the same way (the text
// before its first `:`, or its first word), and the page is rewritten: the way to refresh a page
// after a deliberate change of output.

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace {

/// The lines of a file; exits 2 naming it when it cannot be read.
std::vector<std::string> read_lines(const fs::path& file) {
    std::ifstream in(file);
    if (!in) {
        std::cerr << file.string() << ": cannot be read\n";
        std::exit(2);
    }
    std::vector<std::string> lines;
    std::string line;
    while (std::getline(in, line))
        lines.push_back(line);
    return lines;
}

/// `s` without leading and trailing blanks.
std::string trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\r");
    if (b == std::string_view::npos) return {};
    const auto e = s.find_last_not_of(" \t\r");
    return std::string(s.substr(b, e - b + 1));
}

/// One quoted output line: its line number in the page and its text.
struct Quoted {
    std::size_t line;
    std::string text;
};

/// One command of a console block and the output lines the page quotes for it.
struct Example {
    std::size_t line;
    std::string command;
    int exit_code = 0;
    bool needs_rtl = false;
    std::vector<Quoted> quoted;
};

/// A fence line's marker (``` or ~~~) and info string, or nothing.
bool fence(const std::string& line, std::string& info) {
    const std::string t = trim(line);
    if (t.rfind("```", 0) != 0 && t.rfind("~~~", 0) != 0) return false;
    info = trim(std::string_view(t).substr(3));
    return true;
}

/// Whether a line in a non-console fence is a concrete cardsim command.
bool looks_like_cardsim_command(const std::string& line) {
    std::string t = trim(line);
    if (t.rfind("$ ", 0) == 0) t = trim(std::string_view(t).substr(2));
    return t.rfind("cardsim ", 0) == 0 || t.rfind("build/cardsim ", 0) == 0 ||
           t.rfind("./build/cardsim ", 0) == 0;
}

/// The examples of a page; errors for cardsim commands outside console blocks.
std::vector<Example> parse_examples(const std::vector<std::string>& lines, std::vector<std::string>& errors,
                                    const std::string& page) {
    std::vector<Example> out;
    bool in_fence = false, console = false, rtl = false;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        std::string info;
        if (fence(lines[i], info)) {
            if (!in_fence) {
                in_fence = true;
                std::istringstream words(info);
                std::string lang, flag;
                words >> lang;
                console = lang == "console";
                rtl = false;
                while (words >> flag)
                    rtl = rtl || flag == "rtl";
            } else {
                in_fence = false;
            }
            continue;
        }
        if (!in_fence) continue;
        const std::string& l = lines[i];
        if (!console) {
            if (looks_like_cardsim_command(l))
                errors.push_back(page + ":" + std::to_string(i + 1) +
                                 ": a cardsim command outside a ```console block (put concrete examples in "
                                 "console blocks, with `$ `, so the doc test runs them): " +
                                 trim(l));
            continue;
        }
        if (l.rfind("$ ", 0) == 0) {
            Example e{i + 1, l.substr(2), 0, rtl, {}};
            if (auto hash = e.command.rfind("# exit "); hash != std::string::npos) {
                e.exit_code = std::atoi(e.command.c_str() + hash + 7);
                e.command = trim(e.command.substr(0, hash));
            }
            out.push_back(e);
        } else if (!out.empty() && out.back().line < i + 1) {
            if (trim(l) != "..." && !trim(l).empty()) out.back().quoted.push_back({i + 1, l});
        } else if (!trim(l).empty()) {
            errors.push_back(page + ":" + std::to_string(i + 1) +
                             ": output before any `$ ` command in a console block");
        }
    }
    return out;
}

/// Whether printed line `got` matches quoted line `want` (`...` stands for any text).
bool matches(const std::string& want, const std::string& got) {
    std::vector<std::string> parts;
    std::size_t from = 0;
    for (std::size_t at; (at = want.find("...", from)) != std::string::npos; from = at + 3)
        parts.push_back(want.substr(from, at - from));
    parts.push_back(want.substr(from));
    if (parts.size() == 1) return trim(want) == trim(got);
    const std::string g = trim(got);
    const std::string first = parts.front(), last = parts.back(); // the first part starts the line
    if (g.compare(0, trim(first).size(), trim(first)) != 0) return false;
    std::size_t pos = trim(first).size();
    for (std::size_t k = 1; k + 1 < parts.size(); ++k) {
        const auto at = g.find(parts[k], pos);
        if (at == std::string::npos) return false;
        pos = at + parts[k].size();
    }
    const std::string tail = trim(last);
    return tail.empty() ||
           (g.size() >= pos + tail.size() && g.compare(g.size() - tail.size(), tail.size(), tail) == 0);
}

/// The text a quoted line starts with, to find its replacement: up to its first `:`, or its first word.
std::string lead(const std::string& s) {
    const std::string t = trim(s);
    if (auto colon = t.find(':'); colon != std::string::npos && colon < 40) return t.substr(0, colon + 1);
    return t.substr(0, t.find(' '));
}

/// What a command printed (stdout and stderr) and its exit code.
struct Ran {
    std::string out;
    int code = -1;
};

/// Runs `command` with bash in `dir`, with `bin` first on PATH.
Ran run(const std::string& command, const fs::path& dir, const fs::path& bin) {
    const std::string shell = "cd '" + dir.string() + "' && PATH='" + bin.string() + "':\"$PATH\" bash -c '" +
                              [&] {
                                  std::string q;
                                  for (char c : command)
                                      q += c == '\'' ? std::string("'\\''") : std::string(1, c);
                                  return q;
                              }() +
                              "' 2>&1";
    Ran r;
    std::FILE* p = ::popen(shell.c_str(), "r");
    if (!p) return r;
    std::array<char, 4096> buf{};
    while (auto n = std::fread(buf.data(), 1, buf.size(), p))
        r.out.append(buf.data(), n);
    const int status = ::pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

/// Runs the page's examples and checks their quoted lines (rewriting them with `update`); 0 when all hold.
int examples(const fs::path& page, const fs::path& cardsim, const fs::path& source, bool update) {
    std::vector<std::string> lines = read_lines(page);
    std::vector<std::string> errors;
    const auto all = parse_examples(lines, errors, page.string());
    // A scratch directory per page, with the binary as `cardsim` on PATH and the repository's
    // configs/ and traces/ beside the commands.
    const fs::path scratch = fs::temp_directory_path() /
                             ("cardsim-doc-" + page.stem().string() + "-" + std::to_string(::getpid()));
    fs::remove_all(scratch);
    fs::create_directories(scratch / "bin");
    fs::create_symlink(fs::absolute(cardsim), scratch / "bin" / "cardsim");
    fs::create_symlink(fs::absolute(source) / "configs", scratch / "configs");
    fs::create_symlink(fs::absolute(source) / "traces", scratch / "traces");
    const Ran version = run("cardsim --version", scratch, scratch / "bin");
    const bool has_rtl = version.out.find("Verilator: none") == std::string::npos;
    bool changed = false;
    std::size_t ran = 0;
    for (auto& e : all) {
        if (e.needs_rtl && !has_rtl) {
            std::cout << page.string() << ":" << e.line << ": skipped (this build has no RTL): " << e.command
                      << "\n";
            continue;
        }
        const Ran r = run(e.command, scratch, scratch / "bin");
        ++ran;
        std::vector<std::string> got;
        std::istringstream in(r.out);
        for (std::string l; std::getline(in, l);)
            got.push_back(l);
        const std::string where = page.string() + ":" + std::to_string(e.line);
        bool failed = false;
        if (r.code != e.exit_code) {
            errors.push_back(where + ": `" + e.command + "` exited " + std::to_string(r.code) +
                             ", the page says " + std::to_string(e.exit_code) +
                             (e.exit_code ? "" : " (mark another with `# exit N`)"));
            failed = true;
        }
        std::size_t next = 0;
        for (auto& q : e.quoted) {
            auto it = std::find_if(got.begin() + static_cast<long>(next), got.end(),
                                   [&](const std::string& g) { return matches(q.text, g); });
            if (it != got.end()) {
                next = static_cast<std::size_t>(it - got.begin()) + 1;
                continue;
            }
            if (update) {
                const std::string key = lead(q.text);
                auto repl = std::find_if(got.begin() + static_cast<long>(next), got.end(),
                                         [&](const std::string& g) { return trim(g).rfind(key, 0) == 0; });
                if (repl != got.end() && !key.empty()) {
                    lines[q.line - 1] = *repl;
                    next = static_cast<std::size_t>(repl - got.begin()) + 1;
                    changed = true;
                    continue;
                }
            }
            errors.push_back(page.string() + ":" + std::to_string(q.line) + ": `" + e.command +
                             "` printed no line (after the lines matched before it) matching\n    " + q.text);
            failed = true;
        }
        if (failed) errors.push_back("  what `" + e.command + "` printed:\n" + r.out);
    }
    fs::remove_all(scratch);
    if (changed) {
        std::ofstream outf(page);
        for (auto& l : lines)
            outf << l << "\n";
        std::cout << page.string() << ": rewritten with the printed lines\n";
    }
    for (auto& e : errors)
        std::cerr << e << "\n";
    std::cout << page.string() << ": " << ran << " commands run, "
              << (errors.empty() ? "every quoted line printed" : "FAILED") << "\n";
    return errors.empty() ? 0 : 1;
}

/// Whether a code point past ASCII is a letter GitHub keeps in an anchor: Latin, Greek, Cyrillic
/// and CJK letters are kept; symbols and punctuation (`×`, `–`, `→`, `·`) are dropped.
bool kept_in_anchor(char32_t c) {
    if (c == 0xD7 || c == 0xF7) return false; // × ÷
    return (c >= 0xC0 && c <= 0x24F) || (c >= 0x370 && c <= 0x4FF) || (c >= 0x3040 && c <= 0x9FFF);
}

/// GitHub's anchor of a heading: lower case, spaces to `-`, letters, digits, `-` and `_` kept,
/// everything else dropped.
std::string slug(const std::string& heading) {
    std::string s;
    for (std::size_t i = 0; i < heading.size();) {
        const auto c = static_cast<unsigned char>(heading[i]);
        if (c < 0x80) {
            if (std::isalnum(c) || c == '-' || c == '_')
                s += static_cast<char>(std::tolower(c));
            else if (c == ' ')
                s += '-';
            ++i;
            continue;
        }
        // One UTF-8 sequence: decode it to decide, copy its bytes when kept.
        const std::size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        char32_t cp = c & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
        for (std::size_t k = 1; k < n && i + k < heading.size(); ++k)
            cp = (cp << 6) | (static_cast<unsigned char>(heading[i + k]) & 0x3F);
        if (kept_in_anchor(cp)) s += heading.substr(i, n);
        i += n;
    }
    return s;
}

/// The anchors of a Markdown file's headings (outside code blocks), with GitHub's -1, -2 suffixes.
std::set<std::string> anchors(const fs::path& file) {
    std::set<std::string> out;
    std::map<std::string, int> seen;
    bool in_fence = false;
    for (auto& l : read_lines(file)) {
        std::string info;
        if (fence(l, info)) {
            in_fence = !in_fence;
            continue;
        }
        if (in_fence || l.empty() || l[0] != '#') continue;
        const auto text = trim(l.substr(l.find_first_not_of('#')));
        std::string s = slug(text);
        const int n = seen[s]++;
        out.insert(n ? s + "-" + std::to_string(n) : s);
    }
    return out;
}

/// Checks every relative link of the pages; 0 when all resolve.
int links(const std::vector<fs::path>& pages) {
    std::vector<std::string> errors;
    std::size_t checked = 0;
    for (auto& page : pages) {
        const auto lines = read_lines(page);
        bool in_fence = false;
        for (std::size_t i = 0; i < lines.size(); ++i) {
            std::string info;
            if (fence(lines[i], info)) {
                in_fence = !in_fence;
                continue;
            }
            if (in_fence) continue;
            // Inline code spans are not links: blank them out first.
            std::string l = lines[i];
            for (std::size_t a; (a = l.find('`')) != std::string::npos;) {
                const auto b = l.find('`', a + 1);
                if (b == std::string::npos) break;
                l.replace(a, b - a + 1, std::string(b - a + 1, ' '));
            }
            for (std::size_t at = 0; (at = l.find("](", at)) != std::string::npos; at += 2) {
                const auto end = l.find(')', at + 2);
                if (end == std::string::npos) break;
                std::string target = l.substr(at + 2, end - at - 2);
                if (auto space = target.find(' '); space != std::string::npos)
                    target = target.substr(0, space);
                if (target.find("://") != std::string::npos || target.rfind("mailto:", 0) == 0) continue;
                ++checked;
                const auto hash = target.find('#');
                const std::string path = target.substr(0, hash),
                                  anchor = hash == std::string::npos ? "" : target.substr(hash + 1);
                const fs::path file = path.empty() ? page : page.parent_path() / path;
                const std::string where = page.string() + ":" + std::to_string(i + 1) + ": ";
                if (!fs::exists(file)) {
                    errors.push_back(where + "the link " + target + " names " +
                                     file.lexically_normal().string() + ", which does not exist");
                    continue;
                }
                if (!anchor.empty() && file.extension() == ".md" && !anchors(file).count(anchor))
                    errors.push_back(where + "the link " + target + " names the anchor #" + anchor +
                                     ", which no heading of " + file.lexically_normal().string() + " has");
            }
        }
    }
    for (auto& e : errors)
        std::cerr << e << "\n";
    std::cout << checked << " relative links checked in " << pages.size() << " pages, " << errors.size()
              << " broken\n";
    return errors.empty() ? 0 : 1;
}

/// Whether `page` has at most `max` lines; says how many it has either way.
int lines(const fs::path& page, std::size_t max) {
    std::ifstream in(page);
    if (!in) {
        std::cerr << page.string() << ": cannot be read\n";
        return 2;
    }
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);)
        ++n;
    std::cout << page.string() << ": " << n << " lines (at most " << max << ")\n";
    if (n > max)
        std::cerr << page.string() << ": " << n - max << " lines over; move the detail to a page of docs/\n";
    return n <= max ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() >= 4 && args[0] == "examples")
        return examples(args[1], args[2], args[3], args.size() > 4 && args[4] == "--update");
    if (args.size() >= 2 && args[0] == "links") {
        std::vector<fs::path> pages(args.begin() + 1, args.end());
        return links(pages);
    }
    if (args.size() == 3 && args[0] == "lines") return lines(args[1], std::stoul(args[2]));
    std::cerr << "usage: doc_check examples PAGE CARDSIM SOURCE_DIR [--update] | doc_check links PAGE... | "
                 "doc_check lines PAGE MAX\n";
    return 2;
}
