#pragma once
// Where the GUI's errors go. The window reports through this interface so that tests (and the
// headless screenshot mode) can replace the modal dialog.
#include <QString>

namespace qs::gui {

class ErrorReporter {
public:
    virtual ~ErrorReporter() = default;
    // `message` is shown as given: for core failures it is qs::Error's text, naming file and tensor.
    virtual void report(const QString& title, const QString& message) = 0;
};

}  // namespace qs::gui
