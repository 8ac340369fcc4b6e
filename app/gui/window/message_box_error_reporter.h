#pragma once
// The desktop's ErrorReporter: a modal critical message box over the main window.
#include <QPointer>
#include <QWidget>

#include "window/error_reporter.h"

namespace qs::gui {

class MessageBoxErrorReporter : public ErrorReporter {
public:
    static constexpr const char* kDialogObjectName = "quantscopeErrorDialog";  // found by tests

    explicit MessageBoxErrorReporter(QWidget* parent) : parent_(parent) {}
    void report(const QString& title, const QString& message) override;

private:
    QPointer<QWidget> parent_;
};

}  // namespace qs::gui
