#include "sigint_cancel.h"

#include "qs/error.h"

namespace qs::cli {
namespace {

// A signal handler can reach no object but a global one. Only the lock-free atomic store inside
// CancelToken::cancel() runs in the handler, which is async-signal-safe.
const qs::CancelToken* activeToken = nullptr;

void onSigint(int) {
    if (activeToken != nullptr) activeToken->cancel();
}

}  // namespace

SigintCancel::SigintCancel(const qs::CancelToken& token) : token_(token) {
    if (activeToken != nullptr) throw Error("internal: only one SigintCancel may be active at a time");
    activeToken = &token_;
    struct sigaction action {};
    action.sa_handler = onSigint;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND;  // the second Ctrl-C terminates as usual
    sigaction(SIGINT, &action, &previous_);
}

SigintCancel::~SigintCancel() {
    sigaction(SIGINT, &previous_, nullptr);
    activeToken = nullptr;
}

}  // namespace qs::cli
