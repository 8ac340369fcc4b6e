#pragma once
// The headless ErrorReporter (screenshot mode): one line on stderr, and a flag the caller turns
// into an exit code, since nobody could close a dialog.
#include "window/error_reporter.h"

namespace qs::gui {

class StderrErrorReporter : public ErrorReporter {
public:
    void report(const QString& title, const QString& message) override;
    bool reported() const { return reported_; }

private:
    bool reported_ = false;
};

}  // namespace qs::gui
