#pragma once
// SigintCancel: while it lives, Ctrl-C cancels the given CancelToken instead of killing the
// process, so a long operation stops at its next poll and the command exits cleanly. A second
// Ctrl-C gets the default action, in case the operation is stuck somewhere that does not poll.
#include <csignal>

#include "qs/cancel_token.h"

namespace qs::cli {

class SigintCancel {
public:
    explicit SigintCancel(const qs::CancelToken& token);
    ~SigintCancel();  // restores the previous SIGINT action
    SigintCancel(const SigintCancel&) = delete;
    SigintCancel& operator=(const SigintCancel&) = delete;

private:
    qs::CancelToken token_;
    struct sigaction previous_ {};
};

}  // namespace qs::cli
