#pragma once
// CancelToken: shared between the thread that may cancel (GUI, Ctrl-C) and the worker that polls it.
#include <atomic>
#include <memory>

#include "qs/error.h"

namespace qs {

class CancelToken {
public:
    CancelToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
    void cancel() const { flag_->store(true, std::memory_order_relaxed); }
    bool cancelled() const { return flag_->load(std::memory_order_relaxed); }
    void throwIfCancelled() const {
        if (cancelled()) throw Cancelled();
    }

private:
    std::shared_ptr<std::atomic<bool>> flag_;
};

}  // namespace qs
