#pragma once
// qs::Error: the one exception type of the core. Its message names the file and, where there is one,
// the tensor, so that the CLI can print it as one line (exit code 2) and the GUI as a dialog.
#include <stdexcept>
#include <string>

namespace qs {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Thrown when a CancelToken was triggered; not an error for the user, so the CLI and GUI treat it apart.
class Cancelled : public Error {
public:
    Cancelled() : Error("cancelled") {}
};

}  // namespace qs
