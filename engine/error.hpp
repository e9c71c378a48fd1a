#pragma once
// The one error type of cardsim: what went wrong, where (file, place) and what was expected.

#include <stdexcept>
#include <string>

namespace cardsim {

/// A failure caused by input (a file, a config, a program, a trace, a command line). Its message
/// is a sentence for a person: it names the file, the place in it and what was expected. Callers
/// at the command line turn it into exit code 2; it never means a bug in cardsim.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A negative verdict, not a fault of the input: the input is well formed and the answer is no
/// (the card refuses the model, the model does not fit the DDR or the arena the SRAM). Its message
/// says why, as a sentence. Callers at the command line turn it into exit code 1, as `cardsim
/// check` does for the same model.
class Refusal : public Error {
public:
    using Error::Error;
};

} // namespace cardsim
