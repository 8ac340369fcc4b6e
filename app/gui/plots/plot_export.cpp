#include "plots/plot_export.h"

#include <QFile>
#include <QPageSize>
#include <QPdfWriter>
#include <QSaveFile>
#include <qcustomplot.h>

namespace qs::gui {
namespace {

QString csvField(const QString& field) {
    if (!field.contains(QLatin1Char(',')) && !field.contains(QLatin1Char('"')) && !field.contains(QLatin1Char('\n'))) {
        return field;
    }
    QString quoted = field;
    quoted.replace(QLatin1Char('"'), QLatin1String("\"\""));
    return QLatin1Char('"') + quoted + QLatin1Char('"');
}

QString csvLine(const QStringList& fields) {
    QStringList escaped;
    escaped.reserve(fields.size());
    for (const QString& f : fields) escaped << csvField(f);
    return escaped.join(QLatin1Char(',')) + QLatin1Char('\n');
}

}  // namespace

QString toCsv(const CsvTable& table) {
    QString text = csvLine(table.header);
    for (const QStringList& row : table.rows) text += csvLine(row);
    return text;
}

QString writeCsv(const QString& path, const CsvTable& table) {
    QSaveFile file(path);  // all or nothing: a failed export leaves no half-written file
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) {
        return QStringLiteral("Cannot write %1: %2").arg(path, file.errorString());
    }
    file.write(toCsv(table).toUtf8());
    if (!file.commit()) return QStringLiteral("Cannot write %1: %2").arg(path, file.errorString());
    return {};
}

namespace {

// QCustomPlot::savePdf goes through QPrinter, whose CUPS plugin can block for many seconds where no
// print server answers; QPdfWriter writes the same vector page without asking one.
bool savePdf(QCustomPlot& plot, const QString& path) {
    QPdfWriter writer(path);
    writer.setCreator(QStringLiteral("QuantScope"));
    writer.setPageSize(QPageSize(QSizeF(plot.width(), plot.height()), QPageSize::Point));
    writer.setPageMargins(QMarginsF(0, 0, 0, 0));
    QCPPainter painter;
    if (!painter.begin(&writer)) return false;
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    painter.setWindow(0, 0, plot.width(), plot.height());  // plot pixels onto the whole page
    plot.toPainter(&painter, plot.width(), plot.height());
    return painter.end();
}

}  // namespace

QString savePlotImage(QCustomPlot& plot, const QString& path, ExportFormat format) {
    bool ok = false;
    switch (format) {
        case ExportFormat::Png: ok = plot.savePng(path, plot.width(), plot.height()); break;
        case ExportFormat::Pdf: ok = savePdf(plot, path); break;
        case ExportFormat::Csv: return QStringLiteral("CSV is not an image format");
    }
    return ok ? QString() : QStringLiteral("Cannot write %1").arg(path);
}

QString exportFormatFilter(ExportFormat format) {
    switch (format) {
        case ExportFormat::Png: return QStringLiteral("PNG image (*.png)");
        case ExportFormat::Pdf: return QStringLiteral("PDF document (*.pdf)");
        case ExportFormat::Csv: return QStringLiteral("CSV table (*.csv)");
    }
    return {};
}

QString exportFormatSuffix(ExportFormat format) {
    switch (format) {
        case ExportFormat::Png: return QStringLiteral("png");
        case ExportFormat::Pdf: return QStringLiteral("pdf");
        case ExportFormat::Csv: return QStringLiteral("csv");
    }
    return {};
}

}  // namespace qs::gui
