#include <memory>
#include <vector>

#include <QFile>
#include <QImage>
#include <QTemporaryDir>

#include "pages/histogram_page.h"
#include "plots/plot_export.h"
#include "plots/plot_view.h"
#include "qt_test_support.h"
#include "window/error_reporter.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

class PlotExportTest : public QtAppTest {};

// Export failures also reach the window's error reporter; the default one is a modal dialog, which
// would wait for a click that never comes offscreen.
class SilentErrorReporter : public ErrorReporter {
public:
    void report(const QString&, const QString& message) override { messages.push_back(message); }
    std::vector<QString> messages;
};

TEST_F(PlotExportTest, CsvQuotesWhatNeedsQuoting) {
    CsvTable table;
    table.header = {QStringLiteral("name"), QStringLiteral("value")};
    table.rows.append({QStringLiteral("a,b"), QStringLiteral("1")});
    table.rows.append({QStringLiteral("say \"hi\""), QStringLiteral("2")});
    EXPECT_EQ(toCsv(table), "name,value\n\"a,b\",1\n\"say \"\"hi\"\"\",2\n");
}

TEST_F(PlotExportTest, LogAxisLabelsArePlainNumbersWithinTwoDecades) {
    PlotView plot;
    plot.setLogValueAxis();
    EXPECT_EQ(plot.yAxis->scaleType(), QCPAxis::stLogarithmic);
    plot.yAxis->setRange(1.0, 7.0);  // a Hessian diagonal: "3", not "3·10⁰"
    EXPECT_EQ(plot.yAxis->numberFormat(), QStringLiteral("g"));
    plot.yAxis->setRange(1e-5, 1e-1);  // KL over methods: powers of ten
    EXPECT_EQ(plot.yAxis->numberFormat(), QStringLiteral("eb"));
    EXPECT_EQ(plot.yAxis->numberPrecision(), 0);
    plot.yAxis->setRange(0.02, 1.5);
    EXPECT_EQ(plot.yAxis->numberFormat(), QStringLiteral("g"));
    // Within two decades, ticks at 1, 2 and 5 times the powers of ten only (not 0.003, 0.004, ...).
    plot.yAxis->setRange(0.0004, 0.007);
    auto ticks = plot.yAxis->ticker().dynamicCast<QCPAxisTickerText>();
    ASSERT_TRUE(ticks);
    EXPECT_EQ(ticks->ticks().values(), (QList<QString>{"0.0005", "0.001", "0.002", "0.005"}));
    plot.yAxis->setRange(1e-5, 1e-1);  // decades again: the log ticker
    EXPECT_TRUE(plot.yAxis->ticker().dynamicCast<QCPAxisTickerLog>());
}

// A tensor name as title is longer than a narrow plot: drawn elided to the plot's width (its end kept
// where asked), the whole of it still the plot's title(); wide again, drawn whole.
TEST_F(PlotExportTest, ATitleWiderThanThePlotIsElided) {
    PlotView plot;
    plot.resize(330, 220);  // about its minimum width
    plot.show();            // a hidden widget gets its resize events when shown
    const QString name = QStringLiteral("model.language_model.layers.12.self_attn.q_proj.qweight");
    plot.setTitle(name, Qt::ElideLeft);
    auto* element = qobject_cast<QCPTextElement*>(plot.plotLayout()->element(0, 0));
    ASSERT_NE(element, nullptr);
    EXPECT_EQ(plot.title(), name);
    EXPECT_NE(element->text(), name);
    EXPECT_TRUE(element->text().endsWith(QStringLiteral("q_proj.qweight"))) << element->text().toStdString();
    EXPECT_LE(QFontMetrics(element->font()).horizontalAdvance(element->text()), plot.width());
    plot.resize(1200, 200);
    QCoreApplication::processEvents();
    EXPECT_EQ(element->text(), name);
}

TEST_F(PlotExportTest, HistogramExportsPngPdfAndCsv) {
    MainWindow window(MainWindow::Settings::Ignore);
    auto reporter = std::make_shared<SilentErrorReporter>();
    window.setErrorReporter(reporter);
    window.show();
    ASSERT_TRUE(window.openPath(kStories));
    ASSERT_TRUE(waitUntil([&] { return !window.isBusy(); }));
    PlotView& plot = *window.histogramPage()->plot();
    QString failure;
    QObject::connect(&plot, &PlotView::exportFailed, [&](const QString& m) { failure = m; });

    QTemporaryDir dir;
    plot.exportTo(ExportFormat::Png, dir.filePath(QStringLiteral("h.png")));
    plot.exportTo(ExportFormat::Pdf, dir.filePath(QStringLiteral("h.pdf")));
    plot.exportTo(ExportFormat::Csv, dir.filePath(QStringLiteral("h.csv")));
    EXPECT_TRUE(failure.isEmpty()) << failure.toStdString();

    const QImage png(dir.filePath(QStringLiteral("h.png")));
    EXPECT_EQ(png.size(), plot.size());
    EXPECT_GT(QFileInfo(dir.filePath(QStringLiteral("h.pdf"))).size(), 1000);
    QFile csv(dir.filePath(QStringLiteral("h.csv")));
    ASSERT_TRUE(csv.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(csv.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    ASSERT_EQ(lines.size(), 129);  // header + 128 bins
    EXPECT_EQ(lines[0], "bin,lower,upper,count");
    qulonglong total = 0;
    for (int i = 1; i < lines.size(); ++i) total += lines[i].section(QLatin1Char(','), 3, 3).toULongLong();
    EXPECT_EQ(total, 64u * 64u);

    plot.exportTo(ExportFormat::Png, dir.filePath(QStringLiteral("missing-folder/h.png")));
    EXPECT_FALSE(failure.isEmpty());
    EXPECT_EQ(reporter->messages.size(), 1u);
}

}  // namespace
}  // namespace qs::gui::test
