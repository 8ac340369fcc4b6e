#pragma once
// WriterGuard: the life of a writer that leaves nothing behind when it fails (the checkpoint and
// GGUF writers). Each public call runs through run(): it is refused once the writer has finished or
// has failed, and any exception marks the writer failed and discards its work before it propagates.
// Private to qs_io.
#include <string>
#include <utility>

#include "qs/error.h"

namespace qs::io::detail {

class WriterGuard {
public:
    explicit WriterGuard(std::string what) : what_(std::move(what)) {}

    // `fail(message)` throws a qs::Error naming the destination; `discard()` removes the work.
    template <typename Body, typename Fail, typename Discard>
    auto run(Body&& body, Fail&& fail, Discard&& discard) {
        if (finished_) fail("the " + what_ + " has already finished");
        if (failed_) fail("the " + what_ + " failed earlier and wrote nothing");
        try {
            return body();
        } catch (...) {
            failed_ = true;
            discard();
            throw;
        }
    }

    void markFinished() { finished_ = true; }
    bool finished() const { return finished_; }

private:
    std::string what_;
    bool finished_ = false;
    bool failed_ = false;
};

}  // namespace qs::io::detail
