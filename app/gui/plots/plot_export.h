#pragma once
// Saving what a plot shows: the picture (PNG, PDF) and the numbers behind it (CSV).
#include <QList>
#include <QString>
#include <QStringList>

class QCustomPlot;

namespace qs::gui {

enum class ExportFormat { Png, Pdf, Csv };

struct CsvTable {
    QStringList header;
    QList<QStringList> rows;
};

QString toCsv(const CsvTable& table);  // RFC 4180 quoting, "\n" line ends
// Each returns an empty string on success, else a message naming the file.
QString writeCsv(const QString& path, const CsvTable& table);
QString savePlotImage(QCustomPlot& plot, const QString& path, ExportFormat format);

QString exportFormatFilter(ExportFormat format);  // for QFileDialog, e.g. "PNG image (*.png)"
QString exportFormatSuffix(ExportFormat format);  // "png"

}  // namespace qs::gui
