#pragma once
// Exporting through the Export panel as a user does, waiting for the worker.
#include <QString>

#include "panels/export_panel.h"
#include "qt_test_support.h"

namespace qs::gui::test {

// Waits for the panel's check of a result on disk (done at once for a result in memory).
inline bool waitForCheck(const ExportPanel& exporter) {
    return waitUntil([&] { return !exporter.isChecking(); }, 60000);
}

// Exports the Export panel's choice to `destination` and waits: why it did not, empty when it did.
inline QString exportTo(ExportPanel& exporter, const QString& destination) {
    exporter.setDestination(destination);
    // A result on disk is checked on the panel's worker first.
    if (!waitForCheck(exporter)) return QStringLiteral("the check did not finish within a minute");
    if (!exporter.problem().isEmpty()) return exporter.problem();
    QString failure;
    const auto connection = QObject::connect(&exporter, &ExportPanel::failed, [&](const QString& m) { failure = m; });
    exporter.startExport();
    const bool finished = waitUntil([&] { return !exporter.isExporting(); }, 60000);
    QObject::disconnect(connection);
    return finished ? failure : QStringLiteral("the export did not finish within a minute");
}

}  // namespace qs::gui::test
