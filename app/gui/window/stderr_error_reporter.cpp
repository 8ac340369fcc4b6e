#include "window/stderr_error_reporter.h"

#include <cstdio>

namespace qs::gui {

void StderrErrorReporter::report(const QString& title, const QString& message) {
    reported_ = true;
    std::fprintf(stderr, "quantscope: %s: %s\n", qUtf8Printable(title), qUtf8Printable(message));
}

}  // namespace qs::gui
