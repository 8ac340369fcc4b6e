#pragma once
// qs::Error: the one exception type of the core. Its message names the file and, where there is one,
// the tensor, so that the CLI can print it as one line (exit code 2) and the GUI as a dialog. The
// text passes through sanitizeMessage, so that what a file holds cannot break that line.
#include <stdexcept>
#include <string>

#include "qs/message_text.h"

namespace qs {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& what) : std::runtime_error(sanitizeMessage(what)) {}
    explicit Error(const char* what) : std::runtime_error(sanitizeMessage(what)) {}
};

// Thrown when a CancelToken was triggered; not an error for the user, so the CLI and GUI treat it apart.
class Cancelled : public Error {
public:
    Cancelled() : Error("cancelled") {}
};

}  // namespace qs
