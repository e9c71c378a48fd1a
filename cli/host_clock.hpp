#pragma once
// The process's own clock: wall-clock seconds since cardsim started, for the `host:` line.

namespace cardsim::cli {

/// Seconds since the process started (since the cli's static initialisation, which precedes main).
double process_seconds();

/// Wall-clock seconds since it was made or last asked.
class Stopwatch {
public:
    Stopwatch();
    /// The seconds since the last lap (or since it was made), and a new lap starts.
    double lap();

private:
    double last_;
};

} // namespace cardsim::cli
