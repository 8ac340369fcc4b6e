// Quantized checkpoints (GPTQ, NVFP4, FP8 exports of the demo, made by quantscope-cli) in the window:
// the Summary tells the scheme and the model's true size, the first selection is the packed weight,
// the Quantize panel quantizes one from its decoded weights and says so (one that does not decode is
// refused, saying why), and a tensor of one value draws no outlier tail.
#include <cmath>

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QTemporaryDir>
#include <qcustomplot.h>

#include "qs/analysis/channel_stats.h"
#include "qs/analysis/histogram.h"
#include "qs/analysis/layer_overview.h"
#include "qs/io/checkpoint.h"

#include "jobs/quantize_job.h"
#include "models/checkpoint_tree_model.h"
#include "pages/channels_page.h"
#include "pages/hessian_page.h"
#include "pages/histogram_page.h"
#include "pages/overview_page.h"
#include "panels/checkpoint_tree_panel.h"
#include "panels/quantize_panel.h"
#include "panels/summary_panel.h"
#include "plots/plot_view.h"
#include "qt_test_support.h"
#include "quantized_demo.h"
#include "window/error_reporter.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

class RecordingReporter : public ErrorReporter {
public:
    void report(const QString&, const QString& message) override { messages << message; }
    QStringList messages;
};

class QuantizedCheckpointTest : public QtAppTest {
protected:
    void SetUp() override {
        window.setErrorReporter(reporter);
        window.show();
    }
    bool open(const QString& method) {
        const QString path = quantizedDemo(method);
        return !path.isEmpty() && window.openPath(path);
    }
    // The bars drawn red, as beyond ±kσ of the mean.
    int tailBars() {
        PlotView& plot = *window.histogramPage()->plot();
        for (int i = 0; i < plot.plottableCount(); ++i) {
            auto* bars = qobject_cast<QCPBars*>(plot.plottable(i));
            if (bars && bars->name().startsWith(QStringLiteral("beyond"))) return bars->dataCount();
        }
        return -1;
    }

    std::shared_ptr<RecordingReporter> reporter = std::make_shared<RecordingReporter>();
    MainWindow window{MainWindow::Settings::Ignore};
};

TEST_F(QuantizedCheckpointTest, TheSummaryGivesTheSchemeAndTheModelsParameterCount) {
    // The dense demo's own count, by its stored elements (BF16: one element per parameter).
    const std::int64_t dense = io::Checkpoint::open(kDemo.toStdString()).summary().parameterCount;
    ASSERT_EQ(dense, 1656320);
    for (const QString& method : {QStringLiteral("gptq4"), QStringLiteral("nvfp4"), QStringLiteral("fp8")}) {
        ASSERT_TRUE(open(method)) << method.toStdString();
        EXPECT_TRUE(
            window.summaryPanel()->text(QStringLiteral("Parameters")).contains(QLocale().toString(qlonglong(dense))))
            << method.toStdString() << ": " << window.summaryPanel()->text(QStringLiteral("Parameters")).toStdString();
    }
    ASSERT_TRUE(open(QStringLiteral("gptq4")));
    // 2 layers x 7 linears, all int4 in groups of 128 with zero points, no act-order.
    EXPECT_EQ(window.summaryPanel()->text(QStringLiteral("Quantization")),
              QStringLiteral("gptq (gptq_v2): int4 g128 asym × 14"));
}

TEST_F(QuantizedCheckpointTest, TheFirstSelectionIsTheFirstLinearsPackedWeight) {
    ASSERT_TRUE(open(QStringLiteral("gptq4")));
    EXPECT_EQ(window.currentTensor(), QStringLiteral("model.layers.0.self_attn.q_proj.qweight"));
    ASSERT_TRUE(open(QStringLiteral("nvfp4")));
    EXPECT_EQ(window.currentTensor(), QStringLiteral("model.layers.0.self_attn.q_proj.weight_packed"));
    ASSERT_TRUE(open(QStringLiteral("fp8")));
    EXPECT_EQ(window.currentTensor(), QStringLiteral("model.layers.0.self_attn.q_proj.weight"));
}

// A quantized checkpoint is quantized from its decoded weights: Start is on, the panel says in one line
// that they are the reference (the CLI's line), the estimate is made, a job runs and its result records
// the source's quantization, and the Hessian tab calibrates the layer of a packed qweight.
TEST_F(QuantizedCheckpointTest, AQuantizedCheckpointIsQuantizedFromItsDecodedWeightsAndThePanelSaysSo) {
    ASSERT_TRUE(open(QStringLiteral("fp8")));
    QuantizePanel& panel = *window.quantizePanel();
    EXPECT_TRUE(panel.refusal().isEmpty()) << panel.refusal().toStdString();
    EXPECT_EQ(panel.sourceNote(),
              QStringLiteral("source is already quantized (fp8, fp8 block 128x128 sym, 14 quantized linears): its "
                             "decoded weights are the reference; KL is measured against them"));
    EXPECT_TRUE(panel.findChild<QLabel*>(QStringLiteral("sourceNote"))->isVisibleTo(&panel));
    panel.setSampling(2, 32, 2);
    ASSERT_TRUE(panel.selectMethods({"rtn4"}));
    ASSERT_TRUE(waitUntil([&] { return panel.estimate().has_value() && !panel.isEstimating(); }))
        << panel.estimateText().toStdString();
    EXPECT_TRUE(panel.startButton()->isEnabled());

    JobResultPtr result;
    QObject::connect(window.quantizeJob(), &QuantizeJob::finished, [&](const JobResultPtr& r) { result = r; });
    ASSERT_TRUE(window.startQuantizeJob());
    ASSERT_TRUE(waitUntil([&] { return !window.quantizeJob()->isRunning(); }, 120000));
    ASSERT_TRUE(result);
    ASSERT_TRUE(result->quantizedSource);
    EXPECT_EQ(result->quantizedSource->format, "fp8");
    EXPECT_GT(result->methods.front().kl.meanKld.value, 0.0);
    EXPECT_TRUE(reporter->messages.isEmpty()) << reporter->messages.join(QLatin1Char('\n')).toStdString();

    window.hessianPage()->setSampling(2, 32);
    window.showPage(QStringLiteral("hessian"));
    window.selectTensor(QStringLiteral("model.layers.0.mlp.down_proj.weight"));
    ASSERT_TRUE(waitUntil([this] { return window.hessianPage()->shown() != nullptr; }))
        << window.hessianPage()->captionText().toStdString();
    EXPECT_EQ(window.hessianPage()->shown()->diagonal.size(), 768u);

    // A dense checkpoint opened next has no note.
    ASSERT_TRUE(window.openPath(kDemo));
    EXPECT_TRUE(panel.sourceNote().isEmpty());
    EXPECT_FALSE(panel.findChild<QLabel*>(QStringLiteral("sourceNote"))->isVisibleTo(&panel));
}

// A checkpoint whose quantized linears QuantScope cannot decode (quant_method 'hqq') has no weights to
// quantize: Start and the Hessian say why.
TEST_F(QuantizedCheckpointTest, StartAndTheHessianAreRefusedForLinearsThatDoNotDecodeSayingWhy) {
    const QString fp8 = quantizedDemo(QStringLiteral("fp8"));
    ASSERT_FALSE(fp8.isEmpty());
    QTemporaryDir dir;
    const QString hqq = QDir(dir.path()).filePath(QStringLiteral("hqq"));
    ASSERT_TRUE(QDir().mkpath(hqq));
    for (const QString& file : QDir(fp8).entryList(QDir::Files))
        ASSERT_TRUE(QFile::copy(QDir(fp8).filePath(file), QDir(hqq).filePath(file)));
    {
        QFile config(QDir(hqq).filePath(QStringLiteral("config.json")));
        ASSERT_TRUE(config.open(QIODevice::ReadOnly));
        QJsonObject json = QJsonDocument::fromJson(config.readAll()).object();
        config.close();
        json[QStringLiteral("quantization_config")] =
            QJsonObject{{QStringLiteral("quant_method"), QStringLiteral("hqq")}};
        ASSERT_TRUE(config.open(QIODevice::WriteOnly | QIODevice::Truncate));
        config.write(QJsonDocument(json).toJson());
    }
    ASSERT_TRUE(window.openPath(hqq));
    QuantizePanel& panel = *window.quantizePanel();
    EXPECT_FALSE(panel.startButton()->isEnabled());
    EXPECT_TRUE(panel.startButton()->toolTip().contains(QStringLiteral("cannot be decoded: quant_method 'hqq'")))
        << panel.startButton()->toolTip().toStdString();
    EXPECT_TRUE(panel.estimateText().contains(QStringLiteral("cannot be decoded")))
        << panel.estimateText().toStdString();
    EXPECT_FALSE(window.startQuantizeJob());
    ASSERT_EQ(reporter->messages.size(), 1);
    EXPECT_TRUE(reporter->messages.front().contains(hqq)) << reporter->messages.front().toStdString();

    window.showPage(QStringLiteral("hessian"));
    window.selectTensor(QStringLiteral("model.layers.0.mlp.down_proj.weight"));
    waitUntil([] { return false; }, 100);
    EXPECT_FALSE(window.hessianPage()->isBusy());
    EXPECT_TRUE(window.hessianPage()->captionText().contains(QStringLiteral("cannot be decoded")))
        << window.hessianPage()->captionText().toStdString();

    // A dense checkpoint opened next can be quantized again.
    ASSERT_TRUE(window.openPath(kDemo));
    EXPECT_TRUE(panel.refusal().isEmpty());
    EXPECT_TRUE(panel.startButton()->isEnabled());
}

TEST_F(QuantizedCheckpointTest, ATensorOfOneValueDrawsNoOutlierTail) {
    ASSERT_TRUE(open(QStringLiteral("nvfp4")));
    window.selectTensor(QStringLiteral("model.layers.0.self_attn.q_proj.weight_global_scale"));
    ASSERT_TRUE(waitUntil([this] {
        return window.histogramPage()->shownTensor().endsWith(QStringLiteral("weight_global_scale")) &&
               !window.histogramPage()->isBusy();
    }));
    ASSERT_TRUE(window.histogramPage()->histogram().has_value());
    EXPECT_EQ(window.histogramPage()->histogram()->stddev, 0.0);
    EXPECT_EQ(tailBars(), 0);
    // A spread-out tensor still has its tails.
    window.selectTensor(QStringLiteral("model.embed_tokens.weight"));
    ASSERT_TRUE(waitUntil([this] {
        return window.histogramPage()->shownTensor() == QStringLiteral("model.embed_tokens.weight") &&
               !window.histogramPage()->isBusy();
    }));
    EXPECT_GT(tailBars(), 0);
}

// The packed codes (qweight: int32 words around ±2·10⁹; weight_packed: bytes) are shown as the
// weights they decode to: as many as the linear has, spread like the original's (the dense demo's,
// histogrammed from its own tensor), rounded to 16 levels per group.
TEST_F(QuantizedCheckpointTest, ThePackedCodesAreShownAsTheDecodedWeights) {
    const io::Checkpoint demo = io::Checkpoint::open(kDemo.toStdString());
    const analysis::Histogram original =
        analysis::computeHistogram(demo.tensor("model.layers.0.self_attn.q_proj.weight"));
    for (const QString& method : {QStringLiteral("gptq4"), QStringLiteral("nvfp4")}) {
        ASSERT_TRUE(open(method));
        const HistogramPage& page = *window.histogramPage();
        ASSERT_TRUE(waitUntil([&] { return page.histogram().has_value() && !page.isBusy(); }));
        EXPECT_TRUE(page.shownTensor().endsWith(method == QStringLiteral("gptq4") ? QStringLiteral("qweight")
                                                                                  : QStringLiteral("weight_packed")));
        EXPECT_FALSE(page.decodedAs().isEmpty());
        const analysis::Histogram& h = *page.histogram();
        EXPECT_EQ(h.count, original.count) << method.toStdString();  // 256 x 256 weights, not 32 x 256 words
        EXPECT_NEAR(h.stddev, original.stddev, 0.1 * original.stddev) << method.toStdString();
        EXPECT_NEAR(h.max, original.max, 0.25 * original.max) << method.toStdString();
        EXPECT_NEAR(h.min, original.min, 0.25 * std::abs(original.min)) << method.toStdString();
        EXPECT_TRUE(page.statsText().contains(QStringLiteral("decoded from"))) << page.statsText().toStdString();
    }
    // Its scales are still shown as stored.
    window.selectTensor(QStringLiteral("model.layers.0.self_attn.q_proj.weight_scale"));
    ASSERT_TRUE(waitUntil([this] {
        return window.histogramPage()->shownTensor().endsWith(QStringLiteral("weight_scale")) &&
               !window.histogramPage()->isBusy();
    }));
    EXPECT_TRUE(window.histogramPage()->decodedAs().isEmpty());
}

// Outlier channels of a GPTQ qweight ([in/8, out] int32) are the decoded linear's: 256 outputs by 256
// inputs, each output channel's largest |w| near the original's (4-bit rounding moves it little).
TEST_F(QuantizedCheckpointTest, OutlierChannelsOfPackedCodesAreTheDecodedLinears) {
    const io::Checkpoint demo = io::Checkpoint::open(kDemo.toStdString());
    const analysis::ChannelStats original =
        analysis::computeChannelStats(demo.tensor("model.layers.0.self_attn.q_proj.weight"));
    ASSERT_TRUE(open(QStringLiteral("gptq4")));
    window.showPage(QStringLiteral("channels"));
    const ChannelsPage& page = *window.channelsPage();
    ASSERT_TRUE(waitUntil([&] { return page.stats().has_value() && !page.isBusy(); }));
    EXPECT_TRUE(page.shownTensor().endsWith(QStringLiteral("qweight")));
    EXPECT_FALSE(page.decodedAs().isEmpty());
    const analysis::ChannelStats& s = *page.stats();
    ASSERT_EQ(s.rows, original.rows);
    ASSERT_EQ(s.cols, original.cols);
    for (std::size_t r = 0; r < s.outputMaxAbs.size(); ++r)
        ASSERT_NEAR(s.outputMaxAbs[r], original.outputMaxAbs[r], 0.25f * original.outputMaxAbs[r])
            << "output channel " << r;
}

// The Overview of a GPTQ export is not empty: each cell is its linear's decoded weights (the codes
// tensor named), with moments near the original's, every layer and module of the demo covered.
TEST_F(QuantizedCheckpointTest, TheOverviewShowsTheDecodedLinears) {
    const io::Checkpoint demo = io::Checkpoint::open(kDemo.toStdString());
    const analysis::LayerOverview original = analysis::computeLayerOverview(demo, {});
    ASSERT_TRUE(open(QStringLiteral("gptq4")));
    ASSERT_TRUE(window.showPage(QStringLiteral("overview")));
    const OverviewPage& page = *window.overviewPage();
    ASSERT_TRUE(waitUntil([&] { return page.overview().has_value() && !page.isBusy(); }));
    const analysis::LayerOverview& o = *page.overview();
    ASSERT_EQ(o.layers, original.layers);
    ASSERT_EQ(o.modules, original.modules);
    for (std::size_t r = 0; r < o.layers.size(); ++r)
        for (std::size_t c = 0; c < o.modules.size(); ++c) {
            const analysis::WeightStats* cell = o.cell(r, c);
            ASSERT_NE(cell, nullptr);
            EXPECT_TRUE(cell->tensor.ends_with(".qweight")) << cell->tensor;
            const analysis::WeightStats& want = *original.cell(r, c);
            EXPECT_EQ(cell->count, want.count) << cell->tensor;  // weights, not int32 words
            EXPECT_NEAR(cell->stddev, want.stddev, 0.1 * want.stddev) << cell->tensor;
        }
}

TEST_F(QuantizedCheckpointTest, TheColourScaleOfOneValueIsReadable) {
    EXPECT_EQ(colorScaleRange(0.0, 0.0), QCPRange(0.0, 1.0));  // no outliers anywhere: not ±4e-13
    EXPECT_EQ(colorScaleRange(2.0, 2.0), QCPRange(1.0, 3.0));
    EXPECT_EQ(colorScaleRange(-0.5, 3.0), QCPRange(-0.5, 3.0));
}

}  // namespace
}  // namespace qs::gui::test
