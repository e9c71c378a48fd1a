#include "cli/sweep/runner.hpp"

#include "cli/sweep/host_times.hpp"
#include "cli/sweep/process.hpp"
#include "cli/sweep/results.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "models/checkpoint.hpp"
#include "models/recognise.hpp"

#include <fmt/core.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <deque>
#include <exception>
#include <fcntl.h>
#include <map>
#include <set>
#include <sys/file.h>
#include <thread>
#include <unistd.h>

namespace cardsim::cli::sweep {
namespace {

using Clock = std::chrono::steady_clock;

/// Set by SIGINT / SIGTERM while a sweep runs.
volatile std::sig_atomic_t stop_requested = 0;

extern "C" void request_stop(int) {
    stop_requested = 1;
}

/// Installs the stop handlers for its lifetime and restores the old ones after.
class StopSignals {
public:
    StopSignals() {
        stop_requested = 0;
        struct sigaction sa {};
        sa.sa_handler = request_stop;
        sigemptyset(&sa.sa_mask);
        ::sigaction(SIGINT, &sa, &old_int_);
        ::sigaction(SIGTERM, &sa, &old_term_);
    }
    ~StopSignals() {
        ::sigaction(SIGINT, &old_int_, nullptr);
        ::sigaction(SIGTERM, &old_term_, nullptr);
    }
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

private:
    struct sigaction old_int_ {
    }, old_term_{};
};

/// `1:05:09` or `4:07`.
std::string clock_text(double seconds) {
    auto s = std::uint64_t(seconds + 0.5);
    if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
    return fmt::format("{}:{:02}", s / 60, s % 60);
}

/// Reads a file the child wrote, or "" if it is missing.
std::string slurp(const std::filesystem::path& p) {
    std::error_code ec;
    if (!std::filesystem::exists(p, ec)) return {};
    return io::read_file(p);
}

/// Writes every generated model a point of `points` needs into DIR/models (once: a model already
/// there is kept). make-model writes into a temporary directory renamed at the end.
void materialise_models(const SweepSpec& spec, const std::vector<const Point*>& todo,
                        const std::filesystem::path& dir) {
    std::set<std::size_t> needed;
    for (auto p : todo)
        needed.insert(p->model);
    for (auto m : needed) {
        const auto& model = spec.models[m];
        auto gen = std::get_if<GeneratedModel>(&model.source);
        if (!gen) continue;
        auto target = model_directory(model, dir);
        if (std::filesystem::exists(target / "config.json")) continue;
        std::filesystem::create_directories(target.parent_path());
        auto partial = target.parent_path() / ("." + model.name + ".partial");
        auto log = target.parent_path() / ("." + model.name + ".log");
        fmt::print(stderr, "generating model {} ({} {}, {}) into {}\n", model.name, gen->arch, gen->size,
                   gen->shapes_only ? std::string("shapes only") : fmt::format("seed {}", gen->seed),
                   target.string());
        std::vector<std::string> argv{self_executable().string(),
                                      "make-model",
                                      "--arch",
                                      gen->arch,
                                      "--size",
                                      gen->size,
                                      "--force",
                                      "-o",
                                      partial.string()};
        if (gen->shapes_only)
            argv.emplace_back("--shapes-only"); // no weights: no seed to draw them
        else
            argv.insert(argv.end(), {"--seed", std::to_string(gen->seed)});
        auto child = Child::spawn(argv, log, log);
        auto ended = child.wait();
        if (ended.code != 0 || ended.signal) {
            auto text = slurp(log);
            std::filesystem::remove_all(partial);
            throw Error(fmt::format("{}: generating model {} failed ({}): {}", spec.file.string(), model.name,
                                    ended.text(), text));
        }
        std::filesystem::remove(log);
        std::filesystem::remove_all(target);
        std::filesystem::rename(partial, target);
    }
}

/// The line of DIR/sweep-settings.txt naming the spec: what a report of the directory is titled.
/// The rows do not depend on it, so a resume does not compare it.
constexpr std::string_view name_key = "name=";

/// The settings a results directory's rows depend on beyond their axis values: the base config,
/// the models, the tokens, the prompt and the mode; and the spec's name. Kept in
/// DIR/sweep-settings.txt.
std::string settings_text(const SweepSpec& spec) {
    std::string t =
        "# The settings of the sweep whose results are in this directory; a rerun (resume) must match.\n";
    std::string name = spec.name; // one line, whatever the spec spells
    std::replace_if(
        name.begin(), name.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }, ' ');
    t += fmt::format("{}{}\n", name_key, name);
    t += fmt::format("base_config_digest={}\n", card::digest_hex(spec.base));
    for (auto& m : spec.models) {
        if (auto g = std::get_if<GeneratedModel>(&m.source))
            t += fmt::format("model.{}=generate arch={} size={} seed={}{}\n", m.name, g->arch, g->size,
                             g->seed, g->shapes_only ? " shapes_only" : "");
        else
            t += fmt::format("model.{}={}\n", m.name, std::get<std::filesystem::path>(m.source).string());
    }
    const bool swept =
        std::any_of(spec.axes.begin(), spec.axes.end(), [](auto& a) { return a.path == tokens_axis; });
    t += swept ? std::string("tokens=(an axis)\n") : fmt::format("tokens={}\n", spec.tokens);
    // A sweep of one sequence a step writes no line: its settings read as before `seqs` existed.
    if (std::any_of(spec.axes.begin(), spec.axes.end(), [](auto& a) { return a.path == seqs_axis; }))
        t += "seqs=(an axis)\n";
    else if (spec.seqs != 1)
        t += fmt::format("seqs={}\n", spec.seqs);
    // A sweep without routing models writes no line: its settings read as before `routing` existed.
    if (std::any_of(spec.axes.begin(), spec.axes.end(), [](auto& a) { return a.path == routing_axis; }))
        t += fmt::format("routing=(an axis) seed={}\n", spec.routing_seed);
    else if (spec.routing)
        t += fmt::format("routing={} seed={}\n", *spec.routing, spec.routing_seed);
    // A sweep of one card writes no line: its settings read as before `plan` existed.
    if (std::any_of(spec.axes.begin(), spec.axes.end(), [](auto& a) { return a.path == plan_axis; }))
        t += "plan=(an axis)\n";
    else if (spec.plan != "none")
        t += fmt::format("plan={}\n", spec.plan);
    std::string ids;
    for (auto id : spec.prompt)
        ids += fmt::format("{}{}", ids.empty() ? "" : ",", id);
    t += fmt::format("prompt={}\n", ids);
    if (spec.prompt_len) t += fmt::format("prompt_len={} chunk={}\n", *spec.prompt_len, spec.chunk);
    if (auto& sv = spec.serve) {
        // Swept options appear as axis columns; the rest are settings.
        auto axis = [&](std::string_view k) {
            return std::any_of(spec.axes.begin(), spec.axes.end(), [&](auto& a) { return a.path == k; });
        };
        t += fmt::format("serve.trace={}\n",
                         sv->requests
                             ? sv->requests->string()
                             : fmt::format("poisson rate={} count={} prompt_len={} output_len={} seed={}",
                                           axis("serve.rate") ? "(an axis)" : fmt::format("{}", sv->rate),
                                           sv->count, sv->prompt_len, sv->output_len, sv->seed));
        t += fmt::format("serve.policy={} token_budget={} max_seqs={} chunk={}\n", sv->policy,
                         axis("serve.token_budget") ? "(an axis)" : std::to_string(sv->token_budget),
                         axis("serve.max_seqs") ? "(an axis)" : std::to_string(sv->max_seqs),
                         axis("serve.chunk") ? "(an axis)" : std::to_string(sv->chunk));
    }
    t += fmt::format("mode={}\n", spec.full ? "full" : "timing-only");
    return t;
}

/// Checks that DIR/sweep-settings.txt, if there, matches `spec` (naming the first line that
/// differs).
void check_settings(const SweepSpec& spec, const std::filesystem::path& dir) {
    const auto file = dir / "sweep-settings.txt";
    const std::string want = settings_text(spec);
    if (!std::filesystem::exists(file)) return;
    const std::string have = io::read_file(file);
    if (have == want) return;
    // Each line with its number, the name left out (an older directory has none).
    auto lines = [](const std::string& s) {
        std::vector<std::pair<std::size_t, std::string>> v;
        std::size_t at = 0, number = 0;
        while (at < s.size()) {
            auto nl = s.find('\n', at);
            auto line = s.substr(at, nl - at);
            ++number;
            if (!line.starts_with(name_key)) v.emplace_back(number, std::move(line));
            at = nl == std::string::npos ? s.size() : nl + 1;
        }
        return v;
    };
    auto a = lines(have), b = lines(want);
    std::size_t i = 0;
    while (i < a.size() && i < b.size() && a[i].second == b[i].second)
        ++i;
    if (i == a.size() && i == b.size()) return;
    throw Error(
        fmt::format("{}:{}: the results here were made with `{}` but {} asks for `{}`; use another -o DIR "
                    "(or remove the directory to start over)",
                    file.string(), i < a.size() ? a[i].first : (a.empty() ? 1 : a.back().first + 1),
                    i < a.size() ? a[i].second : "", spec.file.string(), i < b.size() ? b[i].second : ""));
}

/// What the spec's model directories hold, as DIR/sweep-models.txt records it: for each model given
/// by path, the xxh64 of its config.json, and in a full sweep (whose figures depend on the weights)
/// each safetensors file's name, size and modification time. A model regenerated or replaced under
/// the same path then no longer matches its rows. Generated models are named by their settings.
std::string models_text(const SweepSpec& spec) {
    std::string t = "# What the model directories held when this sweep ran; a rerun (resume) must match.\n";
    for (auto& m : spec.models) {
        const auto* path = std::get_if<std::filesystem::path>(&m.source);
        if (!path) continue;
        std::error_code ec;
        const auto config = *path / "config.json";
        std::uint64_t config_digest = 0;
        if (std::filesystem::is_regular_file(config, ec)) {
            const auto text = io::read_file(config);
            config_digest = XXH64(text.data(), text.size(), 0);
        }
        t += fmt::format("model.{}.config={:016x}\n", m.name, config_digest);
        if (!spec.full) continue;
        std::vector<std::string> files;
        for (auto it = std::filesystem::directory_iterator(*path, ec);
             !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
            if (it->path().extension() != ".safetensors") continue;
            std::error_code e;
            const auto size = it->file_size(e);
            const auto written = it->last_write_time(e).time_since_epoch().count();
            files.push_back(fmt::format("{}:{}:{}", it->path().filename().string(), size, written));
        }
        std::sort(files.begin(), files.end());
        for (auto& f : files)
            t += fmt::format("model.{}.weights={}\n", m.name, f);
    }
    return t;
}

/// Checks DIR/sweep-models.txt, when there (a directory made before it has none), against what the
/// spec's models hold now.
void check_models(const SweepSpec& spec, const std::filesystem::path& dir) {
    const auto file = dir / "sweep-models.txt";
    if (!std::filesystem::exists(file)) return;
    if (io::read_file(file) == models_text(spec)) return;
    throw Error(fmt::format("{}: a model directory of {} holds other files than when these results were made "
                            "(regenerated or replaced: its rows would mix two models); use another -o DIR "
                            "(or remove the directory to start over)",
                            file.string(), spec.file.string()));
}

/// An exclusive lock on DIR/.lock for its lifetime: two sweeps never write one directory.
class DirectoryLock {
public:
    explicit DirectoryLock(const std::filesystem::path& dir) {
        const auto file = dir / ".lock";
        fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0) throw Error(fmt::format("cannot open `{}`: {}", file.string(), std::strerror(errno)));
        if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
            ::close(fd_);
            throw Error(
                fmt::format("{}: another cardsim sweep is writing into {}; wait for it or use another -o DIR",
                            file.string(), dir.string()));
        }
    }
    ~DirectoryLock() { ::close(fd_); }
    DirectoryLock(const DirectoryLock&) = delete;
    DirectoryLock& operator=(const DirectoryLock&) = delete;

private:
    int fd_ = -1;
};

/// One point being run.
struct Running {
    const Point* point;
    std::optional<card::CardConfig> config;
    Child child;
    Clock::time_point started;
    std::filesystem::path out, err;
};

/// Adds `--routing M --routing-seed S` when the point has a routing model.
void routing_args(const SweepSpec& spec, const Point& p, std::vector<std::string>& argv) {
    if (auto r = point_routing(spec, p))
        argv.insert(argv.end(), {"--routing", *r, "--routing-seed", std::to_string(spec.routing_seed)});
}

/// Whether the checkpoint in `dir` is an encoder (false when its config.json cannot be read: the
/// point's run then says why).
bool encoder_model(const std::filesystem::path& dir) {
    try {
        const auto checkpoint = models::Checkpoint::open_config(dir);
        return std::holds_alternative<models::EncoderSpec>(
            models::parse_config(checkpoint.config(), checkpoint.config_path()));
    } catch (const Error&) {
        return false;
    }
}

/// The `cardsim run` command line of a point (without its config options) of model `model`, an
/// encoder or not.
std::vector<std::string> run_argv(const SweepSpec& spec, const Point& p, const std::string& self,
                                  const std::filesystem::path& model, bool encoder) {
    std::vector<std::string> argv{self, "run", model.string(), "--machine"};
    // An encoder runs its prompt in one step and generates no tokens (run refuses --tokens for it).
    if (!encoder) argv.insert(argv.end(), {"--tokens", std::to_string(point_tokens(spec, p))});
    if (auto seqs = point_seqs(spec, p); seqs != 1) argv.insert(argv.end(), {"--seqs", std::to_string(seqs)});
    if (!spec.full) argv.emplace_back("--timing-only");
    routing_args(spec, p, argv);
    if (auto plan = point_plan(spec, p); plan != "none") argv.insert(argv.end(), {"--plan", plan});
    if (spec.prompt_len)
        argv.insert(argv.end(), {"--prompt-len", std::to_string(*spec.prompt_len), "--chunk",
                                 std::to_string(spec.chunk)});
    if (!spec.prompt.empty()) {
        std::string ids;
        for (auto t : spec.prompt)
            ids += fmt::format("{}{}", ids.empty() ? "" : ",", t);
        argv.insert(argv.end(), {"--prompt", ids});
    }
    return argv;
}

/// The `cardsim serve` command line of a point of a `[serve]` spec (without its config options).
std::vector<std::string> serve_argv(const SweepSpec& spec, const Point& p, const std::string& self,
                                    const std::filesystem::path& model) {
    const auto& sv = *spec.serve;
    std::vector<std::string> argv{self, "serve", model.string(), "--machine"};
    if (sv.requests)
        argv.insert(argv.end(), {"--requests", sv.requests->string()});
    else
        argv.insert(argv.end(), {"--gen", "poisson", "--rate", fmt::format("{}", point_rate(spec, p)),
                                 "--count", std::to_string(sv.count), "--prompt-len", sv.prompt_len,
                                 "--output-len", sv.output_len, "--seed", std::to_string(sv.seed)});
    argv.insert(argv.end(),
                {"--policy", sv.policy, "--token-budget",
                 std::to_string(point_serve(spec, p, "serve.token_budget", sv.token_budget)), "--max-seqs",
                 std::to_string(point_serve(spec, p, "serve.max_seqs", sv.max_seqs)), "--chunk",
                 std::to_string(point_serve(spec, p, "serve.chunk", sv.chunk))});
    if (spec.full) argv.emplace_back("--check");
    routing_args(spec, p, argv);
    if (auto plan = point_plan(spec, p); plan != "none") argv.insert(argv.end(), {"--plan", plan});
    return argv;
}

} // namespace

std::optional<std::string> recorded_sweep_name(const std::filesystem::path& dir) {
    const auto file = dir / "sweep-settings.txt";
    if (!std::filesystem::is_regular_file(file)) return std::nullopt;
    const std::string text = io::read_file(file);
    for (std::size_t at = 0; at < text.size();) {
        auto nl = std::min(text.find('\n', at), text.size());
        std::string_view line(text.data() + at, nl - at);
        if (line.starts_with(name_key) && line.size() > name_key.size())
            return std::string(line.substr(name_key.size()));
        at = nl + 1;
    }
    return std::nullopt;
}

std::filesystem::path model_directory(const ModelSource& model, const std::filesystem::path& dir) {
    if (auto p = std::get_if<std::filesystem::path>(&model.source)) return *p;
    return std::filesystem::absolute(dir / "models" / model.name).lexically_normal();
}

SweepOutcome run_sweep(const SweepSpec& spec, const Grid& grid, const std::vector<Point>& points,
                       const std::filesystem::path& dir, const RunnerOptions& options) {
    SweepOutcome outcome;
    outcome.points = points.size();
    std::filesystem::create_directories(dir);
    const DirectoryLock lock(dir);
    check_settings(spec, dir);
    check_models(spec, dir);
    ResultsFile results(dir / "results.csv", spec, grid);
    HostTimes host(dir / "host.csv");
    io::write_file_atomically(dir / "sweep-settings.txt", settings_text(spec));
    io::write_file_atomically(dir / "sweep-models.txt", models_text(spec));
    if (options.retry_failed) results.forget_failures();
    std::deque<const Point*> todo;
    for (auto& p : points)
        if (results.row(p.id))
            ++outcome.already_done;
        else
            todo.push_back(&p);
    auto count_failed = [&] {
        for (auto& p : points)
            if (auto row = results.row(p.id); row && (*row)[results.status_column()] != name(Status::Ok))
                ++outcome.failed;
    };
    if (todo.empty()) {
        count_failed();
        return outcome;
    }
    materialise_models(spec, {todo.begin(), todo.end()}, dir);
    const auto work = dir / ".work";
    std::filesystem::create_directories(work);
    if (options.traces) std::filesystem::create_directories(dir / "traces");
    const std::string self = self_executable().string();

    StopSignals signals;
    std::vector<Running> running;
    // An error out of the loop (a row that cannot be written: a full disk; a point that cannot be
    // started) takes the running points and the work folder with it, as an interrupt does.
    struct OnError {
        std::vector<Running>& running;
        std::filesystem::path work;
        int exceptions = std::uncaught_exceptions();
        ~OnError() {
            if (std::uncaught_exceptions() <= exceptions) return;
            // Nothing here may throw: the error on its way out is the one to report. A point
            // whose row failed to be written was reaped already; `Child` then sends nothing.
            for (auto& r : running)
                r.child.kill(SIGTERM);
            for (auto& r : running)
                try {
                    (void)r.child.wait();
                } catch (const std::exception&) {
                }
            std::error_code ec;
            std::filesystem::remove_all(work, ec);
        }
    } on_error{running, work};
    const auto start = Clock::now();
    const std::size_t total = todo.size();
    std::size_t finished = 0, failed_now = 0;
    auto last_drawn = Clock::time_point{};
    auto progress = [&](bool changed) {
        if (!options.progress) return;
        if (!changed && Clock::now() - last_drawn < std::chrono::milliseconds(250)) return;
        last_drawn = Clock::now();
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        std::string left = finished ? clock_text(elapsed / double(finished) * double(total - finished)) : "?";
        constexpr std::size_t width = 24;
        std::size_t filled = total ? width * finished / total : width;
        fmt::print(stderr, "\r[{}{}] {}/{} points, {} failed, {} running, {} elapsed, ~{} left   ",
                   std::string(filled, '#'), std::string(width - filled, '.'), finished, total, failed_now,
                   running.size(), clock_text(elapsed), left);
    };
    // Records a finished point's row and reports it (a line a point when not on a terminal).
    auto note = [&](const Point& p, CsvRow row) {
        const bool ok = row[results.status_column()] == name(Status::Ok);
        ++finished, ++outcome.ran;
        if (!ok) ++failed_now;
        if (!options.progress)
            fmt::print(stderr, "point {} ({}): {}{} [{}/{}]\n", p.id, describe(spec, p),
                       row[results.status_column()], ok ? "" : ": " + row.back(), finished, total);
        results.add(std::move(row));
    };
    std::map<std::size_t, bool> encoders; // per model of the spec: read once, at its first point
    auto encoder = [&](std::size_t m) {
        auto [at, fresh] = encoders.try_emplace(m, false);
        if (fresh) at->second = encoder_model(model_directory(spec.models[m], dir));
        return at->second;
    };
    auto launch = [&](const Point* p) {
        auto sets = overrides(spec, *p);
        std::optional<card::CardConfig> config;
        try {
            config = card::load_card_config(spec.config, sets);
        } catch (const Error& e) {
            note(*p, error_row(spec, *p, e.what()));
            return;
        }
        std::vector<std::string> argv =
            spec.serve
                ? serve_argv(spec, *p, self, model_directory(spec.models[p->model], dir))
                : run_argv(spec, *p, self, model_directory(spec.models[p->model], dir), encoder(p->model));
        if (spec.config) argv.insert(argv.end(), {"--config", spec.config->string()});
        if (spec.full && spec.pack_cache) // else the points inherit $CARDSIM_PACK_CACHE
            argv.insert(argv.end(), {"--pack-cache", spec.pack_cache->string()});
        for (auto& s : sets)
            argv.insert(argv.end(), {"--set", s.path + "=" + s.value});
        if (options.traces)
            argv.insert(argv.end(),
                        {"--trace", (dir / "traces" / fmt::format("point-{}.trace", p->id)).string()});
        auto out = work / fmt::format("point-{}.out", p->id), err = work / fmt::format("point-{}.err", p->id);
        running.push_back({p, std::move(config), Child::spawn(argv, out, err), Clock::now(), out, err});
    };
    auto record = [&](Running& r, const Ended& ended, bool timed_out) {
        RunOutput run{ended, slurp(r.out), slurp(r.err), timed_out};
        host.add(r.point->id, run.out);
        note(*r.point,
             result_row(spec, *r.point, r.config, model_directory(spec.models[r.point->model], dir), run));
        std::filesystem::remove(r.out);
        std::filesystem::remove(r.err);
    };

    while ((!todo.empty() || !running.empty()) && !stop_requested) {
        while (!todo.empty() && running.size() < std::max<std::size_t>(options.jobs, 1) && !stop_requested) {
            launch(todo.front());
            todo.pop_front();
        }
        bool any = false;
        for (std::size_t i = 0; i < running.size();) {
            auto& r = running[i];
            auto ended = r.child.poll();
            bool timed_out = false;
            if (!ended && options.timeout_seconds > 0 &&
                std::chrono::duration<double>(Clock::now() - r.started).count() > options.timeout_seconds) {
                r.child.kill(SIGKILL);
                ended = r.child.wait();
                timed_out = true;
            }
            // A point killed by the user's interrupt is not a result: it runs again on resume.
            if (ended && !(stop_requested && ended->signal && !timed_out)) {
                record(r, *ended, timed_out);
                any = true;
            } else if (!ended) {
                ++i;
                continue;
            }
            running.erase(running.begin() + std::ptrdiff_t(i));
        }
        progress(any);
        if (!any) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (stop_requested) {
        outcome.interrupted = true;
        for (auto& r : running)
            r.child.kill(SIGTERM);
        for (auto& r : running)
            (void)r.child.wait();
    }
    if (options.progress) fmt::print(stderr, "\r{:120}\r", "");
    results.finish();
    host.finish();
    std::error_code ec;
    std::filesystem::remove_all(work, ec);
    count_failed();
    return outcome;
}

} // namespace cardsim::cli::sweep
