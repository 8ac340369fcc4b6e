#pragma once
// An ErrorReporter that keeps what it is given ("title: message"), for tests that check what the user is told.
#include <QStringList>

#include "window/error_reporter.h"

namespace qs::gui::test {

class RecordingReporter : public ErrorReporter {
public:
    void report(const QString& title, const QString& message) override {
        reports << title + QStringLiteral(": ") + message;
    }
    QStringList reports;
};

}  // namespace qs::gui::test
