#include "cli/child_process.hpp"

#include "engine/error.hpp"

#include <cstdio>
#include <sys/wait.h>
#include <unistd.h>

namespace cardsim::cli {

std::string in_child(const std::function<std::string()>& f) {
    int fds[2];
    if (::pipe(fds) != 0) throw Error("cannot make a pipe to a child process");
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) throw Error("cannot fork a child process");
    if (pid == 0) {
        ::close(fds[0]);
        int code = 0;
        std::string out;
        try {
            out = "ok\n" + f();
        } catch (const std::exception& e) {
            out = std::string("error\n") + e.what();
            code = 1;
        }
        for (std::size_t at = 0; at < out.size();) {
            auto n = ::write(fds[1], out.data() + at, out.size() - at);
            if (n <= 0) break;
            at += std::size_t(n);
        }
        ::close(fds[1]);
        ::_exit(code);
    }
    ::close(fds[1]);
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
        text.append(buf, std::size_t(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (text.rfind("ok\n", 0) == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) return text.substr(3);
    if (text.rfind("error\n", 0) == 0) throw Error(text.substr(6));
    throw Error("the child process simulating the prefill died");
}

} // namespace cardsim::cli
