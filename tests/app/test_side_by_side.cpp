// File ▸ Compare with Second Quantization… and the Side by side tab, on the demo's own exports (made with
// `quantscope-cli quantize`): our GPTQ int4 folder against a Q4_K_M GGUF file of the same demo. What the
// table shows must be core's figures for each file (formats::roundingError, storedBitsPerWeight, the
// scheme detect() states), computed here from the files themselves; Evaluate then measures both, each
// row exactly pipeline::evaluateCheckpoints of its file.
#include <algorithm>
#include <cmath>

#include <QCheckBox>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QProcess>
#include <QProcessEnvironment>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTemporaryDir>

#include "qs/formats/detect.h"
#include "qs/formats/quantization_diff.h"
#include "qs/formats/rounding_error.h"

#include "jobs/evaluate_job.h"
#include "models/results_table_model.h"
#include "models/side_by_side_model.h"
#include "pages/results_page.h"
#include "pages/side_by_side_page.h"
#include "plots/plot_view.h"
#include "qt_test_support.h"
#include "quantized_demo.h"
#include "recording_reporter.h"
#include "text/number_format.h"
#include "text/results_format.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

int runQuantscope(const QStringList& arguments, QString* errors) {
    QProcess process;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    process.setProcessEnvironment(env);
    process.start(QStringLiteral(QS_QUANTSCOPE_EXE), arguments);
    if (!process.waitForFinished(300000)) {
        process.kill();
        return -1;
    }
    *errors = QString::fromUtf8(process.readAllStandardError());
    return process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
}

class SideBySideTest : public QtAppTest {
protected:
    void SetUp() override {
        window.setErrorReporter(errors);
        window.show();
    }

    SideBySidePage& page() { return *window.sideBySidePage(); }
    bool waitForComparison() {
        return waitUntil([this] { return !page().isBusy(); }, 300000) && page().model()->diff() != nullptr;
    }
    // The table's cell text at the proxy's `row`, `column` (what the user reads).
    QString cell(int row, int column) { return page().proxy()->index(row, column).data().toString(); }
    int sourceRow(int row) { return page().proxy()->mapToSource(page().proxy()->index(row, 0)).row(); }

    MainWindow window{MainWindow::Settings::Ignore};
    std::shared_ptr<RecordingReporter> errors = std::make_shared<RecordingReporter>();
    ModelChecker checker{window.sideBySidePage()->model()};
};

TEST_F(SideBySideTest, EachLinearShowsBothFilesFiguresAsCoreComputesThem) {
    const QString gptq = quantizedDemo(QStringLiteral("gptq4"));
    const QString gguf = quantizedDemo(QStringLiteral("q4_k_m"));
    ASSERT_TRUE(window.openPath(gptq));
    EXPECT_FALSE(window.currentPage() == &page());  // hidden until a second quantization is named
    ASSERT_TRUE(window.compareWithOriginal(kDemo));
    ASSERT_TRUE(window.compareWithSecond(gguf)) << errors->reports.join(QLatin1Char('\n')).toStdString();
    EXPECT_EQ(window.currentPage(), &page());
    EXPECT_TRUE(page().cancelButton()->isVisible());  // while it decodes
    ASSERT_TRUE(waitForComparison());
    EXPECT_FALSE(page().cancelButton()->isVisible());

    const io::Checkpoint a = io::Checkpoint::open(gptq.toStdString());
    const io::Checkpoint b = io::Checkpoint::open(gguf.toStdString());
    const io::Checkpoint o = io::Checkpoint::open(kDemo.toStdString());
    const formats::LinearReader ra(a), rb(b), ro(o);
    std::size_t quantized = 0;
    for (const formats::LayerQuantInfo& l : ra.format().layers) quantized += l.scheme != "dense";
    const SideBySideModel& model = *page().model();
    ASSERT_EQ(static_cast<std::size_t>(model.rowCount()), quantized);
    ASSERT_GT(quantized, 0u);
    for (int row = 0; row < model.rowCount(); ++row) {
        const formats::LinearDiff& d = model.linear(row);
        SCOPED_TRACE(d.ref.prefix);
        EXPECT_EQ(d.typeA, "int4 g128 asym");
        EXPECT_TRUE(d.typeB == "gguf q4_K" || d.typeB == "gguf q6_K") << d.typeB;  // Q4_K_M's mix
        // GPTQ's layout: 4-bit codes, an F16 scale and a 4-bit zero per 128 inputs, an I32 g_idx per input.
        EXPECT_DOUBLE_EQ(d.bitsA, 4.0 + 16.0 / 128 + 4.0 / 128 + 32.0 / static_cast<double>(d.rows));
        EXPECT_EQ(d.bitsB, d.typeB == "gguf q4_K" ? 4.5 : 6.5625);  // ggml's block sizes: 144 and 210 bytes / 256
        ASSERT_TRUE(d.errorA && d.errorB);
        EXPECT_EQ(*d.errorA, formats::roundingError(ra, ro, d.ref).rms);
        EXPECT_EQ(*d.errorB, formats::roundingError(rb, ro, d.ref).rms);
        EXPECT_EQ(d.rmsAMinusB, formats::roundingError(ra, rb, d.ref).rms);
        EXPECT_TRUE(d.differs);  // a GPTQ int4 grid and ggml's blocks never decode alike
    }
    // The A type column of the first row reads as the scheme; B's without the "gguf" of every row.
    EXPECT_EQ(cell(0, SideBySideModel::TypeAColumn), QStringLiteral("int4 g128 asym"));
    EXPECT_FALSE(cell(0, SideBySideModel::TypeBColumn).startsWith(QStringLiteral("gguf")));
    EXPECT_TRUE(page().captionText().contains(QStringLiteral("%1 of %1").arg(quantized)));
    EXPECT_TRUE(page().table()->isColumnHidden(SideBySideModel::RmsDifferenceColumn));  // the errors instead

    // Sorted by A's error, largest first: the first row is the largest error of all.
    page().table()->sortByColumn(SideBySideModel::ErrorAColumn, Qt::DescendingOrder);
    double largest = 0.0;
    for (int row = 0; row < model.rowCount(); ++row) largest = std::max(largest, *model.linear(row).errorA);
    EXPECT_EQ(*model.linear(sourceRow(0)).errorA, largest);

    // A row selected: the histogram of its decoded A − decoded B, every weight counted.
    const formats::LinearDiff& last = model.linear(sourceRow(model.rowCount() - 1));
    ASSERT_TRUE(page().selectLinear(QString::fromStdString(last.ref.prefix)));
    ASSERT_TRUE(waitUntil([this, &last] {
        return !page().isBusy() && page().difference() &&
               page().difference()->linear == QString::fromStdString(last.ref.prefix);
    }));
    const analysis::Histogram& h = page().difference()->histogram;
    EXPECT_EQ(h.count, static_cast<std::uint64_t>(last.rows * last.cols));
    const std::vector<float> difference = formats::roundingError(ra, rb, last.ref).difference;
    EXPECT_EQ(h.min, *std::min_element(difference.begin(), difference.end()));
    EXPECT_EQ(h.max, *std::max_element(difference.begin(), difference.end()));
    EXPECT_GT(page().differencePlot()->plottableCount(), 0);
    EXPECT_TRUE(page().differencePlot()->title().contains(QStringLiteral("A − B")));
    // With the original named, both errors against it overlaid beside: each every weight of its file's.
    ASSERT_TRUE(page().difference()->errorA && page().difference()->errorB);
    const std::vector<float> errorB = formats::roundingError(rb, ro, last.ref).difference;
    EXPECT_EQ(page().difference()->errorA->count, static_cast<std::uint64_t>(last.rows * last.cols));
    EXPECT_EQ(page().difference()->errorB->min, *std::min_element(errorB.begin(), errorB.end()));
    EXPECT_EQ(page().difference()->errorB->max, *std::max_element(errorB.begin(), errorB.end()));
    EXPECT_TRUE(page().errorPlot()->isVisible());
    EXPECT_EQ(page().errorPlot()->graphCount(), 2);
    EXPECT_TRUE(errors->reports.isEmpty()) << errors->reports.join(QLatin1Char('\n')).toStdString();
}

// The negative control: a file against itself differs nowhere (every RMS of A − B zero) and "only
// tensors that differ" leaves no row; against the GGUF, every row stays.
TEST_F(SideBySideTest, TheSameFileDiffersNowhereAndTheFilterHidesItsRows) {
    const QString gptq = quantizedDemo(QStringLiteral("gptq4"));
    ASSERT_TRUE(window.openPath(gptq));
    ASSERT_TRUE(window.compareWithSecond(gptq));
    ASSERT_TRUE(waitForComparison());
    const SideBySideModel& model = *page().model();
    ASSERT_GT(model.rowCount(), 0);
    for (int row = 0; row < model.rowCount(); ++row) {
        EXPECT_FALSE(model.linear(row).differs);
        EXPECT_EQ(model.linear(row).rmsAMinusB, 0.0);
        EXPECT_FALSE(model.linear(row).errorA);  // no original named
        EXPECT_EQ(cell(row, SideBySideModel::DiffersColumn), QStringLiteral("no"));
    }
    EXPECT_TRUE(page().table()->isColumnHidden(SideBySideModel::ErrorAColumn));
    EXPECT_FALSE(page().table()->isColumnHidden(SideBySideModel::RmsDifferenceColumn));
    ASSERT_TRUE(waitUntil([this] { return !page().isBusy() && page().difference(); }));
    EXPECT_FALSE(page().difference()->differs);
    EXPECT_TRUE(page().differencePlot()->title().contains(QStringLiteral("bit for bit")));
    EXPECT_FALSE(page().difference()->errorA);  // nothing to measure the errors against
    EXPECT_FALSE(page().errorPlot()->isVisible());
    page().differsOnly()->setChecked(true);
    EXPECT_EQ(page().proxy()->rowCount(), 0);
    page().differsOnly()->setChecked(false);
    EXPECT_EQ(page().proxy()->rowCount(), model.rowCount());

    ASSERT_TRUE(window.compareWithSecond(quantizedDemo(QStringLiteral("q4_k_m"))));
    ASSERT_TRUE(waitForComparison());
    page().differsOnly()->setChecked(true);
    EXPECT_EQ(page().proxy()->rowCount(), page().model()->rowCount());
}

// Cancel stops the comparison (its result, even one already computed, is dropped), and the tree's
// selection then selects its linear's row in a comparison run again.
TEST_F(SideBySideTest, CancelStopsTheComparisonAndTheTreeSelectsARow) {
    ASSERT_TRUE(window.openPath(quantizedDemo(QStringLiteral("gptq4"))));
    ASSERT_TRUE(window.compareWithSecond(quantizedDemo(QStringLiteral("q4_k_m"))));
    ASSERT_TRUE(page().cancelButton()->isVisible());
    page().cancelButton()->click();  // before the worker's result can reach the page: it is dropped
    ASSERT_TRUE(waitUntil([this] { return !page().isBusy(); }, 300000));
    EXPECT_FALSE(page().model()->diff());
    EXPECT_TRUE(page().captionText().contains(QStringLiteral("cancelled")));
    EXPECT_TRUE(errors->reports.isEmpty());

    const QString upProj = QStringLiteral("model.layers.1.mlp.up_proj");
    window.selectTensor(upProj + QStringLiteral(".qzeros"));
    ASSERT_TRUE(window.compareWithSecond(quantizedDemo(QStringLiteral("q4_k_m"))));
    ASSERT_TRUE(waitForComparison());
    const QModelIndex current = page().proxy()->mapToSource(page().table()->currentIndex());
    ASSERT_TRUE(current.isValid());
    EXPECT_EQ(page().model()->linear(current.row()).ref.prefix, upProj.toStdString());
    ASSERT_TRUE(waitUntil([this] { return !page().isBusy() && page().difference(); }));
    EXPECT_EQ(page().difference()->linear, upProj);

    // Selected on another tab: the row follows at once, its histogram is decoded once the tab shows.
    ASSERT_TRUE(window.showPage(QStringLiteral("histogram")));
    const QString oProj = QStringLiteral("model.layers.0.self_attn.o_proj");
    window.selectTensor(oProj + QStringLiteral(".scales"));
    const QModelIndex selected = page().proxy()->mapToSource(page().table()->currentIndex());
    EXPECT_EQ(page().model()->linear(selected.row()).ref.prefix, oProj.toStdString());
    EXPECT_FALSE(page().isBusy());  // nothing decodes for a hidden tab
    EXPECT_EQ(page().difference()->linear, upProj);
    ASSERT_TRUE(window.showPage(page().key()));
    ASSERT_TRUE(waitUntil([this, &oProj] { return !page().isBusy() && page().difference()->linear == oProj; }));
}

// Another model (stories260K's 64-wide linears) is refused in one line, and the tab stays hidden.
TEST_F(SideBySideTest, AQuantizationOfAnotherModelIsRefusedInOneLine) {
    EXPECT_FALSE(window.compareWithSecond(quantizedDemo(QStringLiteral("q4_k_m"))));  // nothing open
    ASSERT_TRUE(window.openPath(quantizedDemo(QStringLiteral("gptq4"))));
    errors->reports.clear();
    EXPECT_FALSE(window.compareWithSecond(kStories));
    ASSERT_EQ(errors->reports.size(), 1);
    EXPECT_TRUE(errors->reports.front().contains(QStringLiteral("is not a quantization of the model")))
        << errors->reports.front().toStdString();
    EXPECT_FALSE(errors->reports.front().contains(QLatin1Char('\n')));
    EXPECT_FALSE(page().hasSecond());
    EXPECT_FALSE(page().isVisible());
}

// Evaluate against Original with a second quantization open: two rows in Results, named by file and
// format, each one's KL report exactly the core's evaluation of that file.
TEST_F(SideBySideTest, EvaluateMeasuresBothAsTheCoreDoes) {
    const QString gptq = quantizedDemo(QStringLiteral("gptq4"));
    const QString gguf = quantizedDemo(QStringLiteral("q4_k_m"));
    ASSERT_TRUE(window.openPath(gptq));
    ASSERT_TRUE(window.compareWithOriginal(kDemo));
    ASSERT_TRUE(window.compareWithSecond(gguf));
    std::vector<double> fractions;
    QObject::connect(window.evaluateJob(), &EvaluateJob::progressed,
                     [&fractions](const qs::Progress& p) { fractions.push_back(p.fraction); });
    ASSERT_TRUE(window.startEvaluation());
    ASSERT_TRUE(waitUntil([this] { return !window.evaluateJob()->isRunning(); }, 600000));
    // One progress bar over both: it never goes back when the second evaluation starts.
    ASSERT_FALSE(fractions.empty());
    EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
    EXPECT_GT(fractions.back(), 0.5);
    const std::vector<EvaluationPtr>& shown = window.resultsPage()->evaluations();
    ASSERT_EQ(shown.size(), 2u) << errors->reports.join(QLatin1Char('\n')).toStdString();
    const ResultsTableModel& table = *window.resultsPage()->table();
    ASSERT_EQ(table.rowCount(), 2);
    EXPECT_EQ(table.data(table.index(0, ResultsTableModel::MethodColumn)).toString(),
              QStringLiteral("gptq4: gptq 4-bit"));
    EXPECT_EQ(table.data(table.index(1, ResultsTableModel::MethodColumn)).toString(),
              QStringLiteral("%1: gguf Q4_K_M").arg(QFileInfo(gguf).fileName()));
    const QString files[] = {gptq, gguf};
    for (int i = 0; i < 2; ++i) {
        const pipeline::CheckpointEvalResult core = pipeline::evaluateCheckpoints(
            defaultEvalPlan(kDemo.toStdString(), files[i].toStdString()), {}, qs::CancelToken());
        const pipeline::MethodResult& row = window.resultsPage()->result()->methods.at(static_cast<std::size_t>(i));
        EXPECT_EQ(row.kl.meanKld.value, core.kl.meanKld.value) << i;
        EXPECT_EQ(row.kl.sameTop.value, core.kl.sameTop.value) << i;
        EXPECT_GT(row.kl.meanKld.value, 0.0);
        EXPECT_EQ(table.data(table.index(i, ResultsTableModel::MeanColumn)).toString(), klText(core.kl.meanKld.value));
    }
    // Two different files: two different KLs (the rows are not one evaluation shown twice).
    EXPECT_NE(shown[0]->result.kl.meanKld.value, shown[1]->result.kl.meanKld.value);
    // One sentence says what both were measured against.
    const QString both = QStringLiteral("gptq 4-bit (%1) and ").arg(durationText(shown[0]->result.seconds));
    bool said = false;
    for (const QLabel* label : window.resultsPage()->findChildren<QLabel*>())
        if (label->text().contains(both) && label->text().contains(QStringLiteral("each as a whole"))) said = true;
    EXPECT_TRUE(said);
}

// Evaluate of A alone, then of A beside B: A's row is replaced by its second evaluation (one row per file),
// B's joins it; a KL of the same file on the same text is the same, whichever evaluation gave it.
TEST_F(SideBySideTest, AFileEvaluatedAgainKeepsOneRow) {
    const QString gptq = quantizedDemo(QStringLiteral("gptq4"));
    const QString gguf = quantizedDemo(QStringLiteral("q4_k_m"));
    ASSERT_TRUE(window.openPath(gptq));
    ASSERT_TRUE(window.compareWithOriginal(kDemo));
    const auto evaluate = [this] {
        return window.startEvaluation() && waitUntil([this] { return !window.evaluateJob()->isRunning(); }, 600000);
    };
    ASSERT_TRUE(evaluate());
    const ResultsTableModel& table = *window.resultsPage()->table();
    ASSERT_EQ(window.resultsPage()->evaluations().size(), 1u) << errors->reports.join(QLatin1Char('\n')).toStdString();
    const EvaluationPtr alone = window.resultsPage()->evaluations().front();
    EXPECT_EQ(table.data(table.index(0, ResultsTableModel::MethodColumn)).toString(), QStringLiteral("gptq 4-bit"));

    ASSERT_TRUE(window.compareWithSecond(gguf));
    ASSERT_TRUE(evaluate());
    const std::vector<EvaluationPtr>& shown = window.resultsPage()->evaluations();
    ASSERT_EQ(shown.size(), 2u);
    ASSERT_EQ(table.rowCount(), 2);
    EXPECT_NE(shown[0], alone);  // the later evaluation, named beside the second
    EXPECT_EQ(table.data(table.index(0, ResultsTableModel::MethodColumn)).toString(),
              QStringLiteral("gptq4: gptq 4-bit"));
    EXPECT_EQ(table.data(table.index(1, ResultsTableModel::MethodColumn)).toString(),
              QStringLiteral("%1: gguf Q4_K_M").arg(QFileInfo(gguf).fileName()));
    EXPECT_EQ(shown[0]->result.kl.meanKld.value, alone->result.kl.meanKld.value);
    EXPECT_NE(shown[1]->result.kl.meanKld.value, alone->result.kl.meanKld.value);  // B is a row of its own

    ASSERT_TRUE(evaluate());  // both again: still a row each
    EXPECT_EQ(window.resultsPage()->evaluations().size(), 2u);
    EXPECT_EQ(table.rowCount(), 2);
}

// The command line of the screenshots: the tab asked for is the Side by side one, and another model
// as --second exits 2.
TEST_F(SideBySideTest, TheCommandLineShowsTheTab) {
    const QString gptq = quantizedDemo(QStringLiteral("gptq4"));
    const QString gguf = quantizedDemo(QStringLiteral("q4_k_m"));
    QTemporaryDir dir;
    const QString png = dir.filePath(QStringLiteral("side.png"));
    QString errorsText;
    ASSERT_EQ(runQuantscope({QStringLiteral("--second"), gguf, QStringLiteral("--original"), kDemo,
                             QStringLiteral("--tab"), QStringLiteral("side-by-side"), QStringLiteral("--size"),
                             QStringLiteral("1366x768"), QStringLiteral("--screenshot"), png, gptq},
                            &errorsText),
              0)
        << errorsText.toStdString();
    EXPECT_GT(QFileInfo(png).size(), 0);
    EXPECT_EQ(
        runQuantscope({QStringLiteral("--second"), kStories, QStringLiteral("--screenshot"), png, gptq}, &errorsText),
        2);
    EXPECT_TRUE(errorsText.contains(QStringLiteral("is not a quantization of the model"))) << errorsText.toStdString();
    // The tab alone, without a second quantization to show, is refused before anything opens.
    EXPECT_EQ(runQuantscope(
                  {QStringLiteral("--tab"), QStringLiteral("side-by-side"), QStringLiteral("--screenshot"), png, gptq},
                  &errorsText),
              2);
    EXPECT_TRUE(errorsText.contains(QStringLiteral("--second"))) << errorsText.toStdString();
}

}  // namespace
}  // namespace qs::gui::test
