// A quantized linear as one tree node and the "Quantized linear" tab's views of it, on GPTQ (act-order),
// NVFP4 and FP8 exports of the demo made by quantscope-cli: the code counts against a count of the
// stored bits made here, the g_idx plot against the stored g_idx, the rounding error's RMS against a
// GPTQ decode written here from the published layout (FORMATS.md 2.2-2.5) and the dense demo.
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include <QTabWidget>
#include <qcustomplot.h>

#include "qs/io/checkpoint.h"

#include "models/checkpoint_tree_model.h"
#include "pages/quantized_linear_page.h"
#include "panels/checkpoint_tree_panel.h"
#include "plots/plot_view.h"
#include "qt_test_support.h"
#include "quantized_demo.h"
#include "window/error_reporter.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

const std::string kQProj = "model.layers.0.self_attn.q_proj";

class RecordingReporter : public ErrorReporter {
public:
    void report(const QString&, const QString& message) override { messages << message; }
    QStringList messages;
};

std::vector<std::int32_t> int32s(const io::TensorView& t) {
    std::vector<std::int32_t> v(static_cast<std::size_t>(t.numel()));
    std::memcpy(v.data(), t.bytes().data(), v.size() * sizeof(std::int32_t));
    return v;
}

std::vector<std::uint8_t> bytesOf(const io::TensorView& t) {
    std::vector<std::uint8_t> v(t.bytes().size());
    std::memcpy(v.data(), t.bytes().data(), v.size());
    return v;
}

class QuantizedLinearPageTest : public QtAppTest {
protected:
    void SetUp() override {
        window.setErrorReporter(reporter);
        window.show();
    }
    // Opens the export and shows the tab with q_proj of layer 0 selected, its views computed.
    const QuantizedLinearPage::Views* openAndShow(const QString& method, const std::string& part) {
        path = quantizedDemo(method);
        if (path.isEmpty() || !window.openPath(path)) return nullptr;
        window.showPage(QStringLiteral("quantized"));
        window.selectTensor(QString::fromStdString(kQProj + "." + part));
        return waitForViews();
    }
    const QuantizedLinearPage::Views* waitForViews() {
        QuantizedLinearPage& page = *window.quantizedLinearPage();
        if (!waitUntil([&] { return !page.isBusy() && page.views().has_value(); })) return nullptr;
        return &*page.views();
    }
    std::map<int, std::uint64_t> shownCounts(const QuantizedLinearPage::Views& v) {
        std::map<int, std::uint64_t> counts;
        for (const auto& l : v.usage) counts[l.code] = l.count;
        return counts;
    }
    QModelIndex moduleNodeOf(const std::string& part) {
        return window.treePanel()->model()->indexOfTensor(QString::fromStdString(kQProj + "." + part)).parent();
    }

    std::shared_ptr<RecordingReporter> reporter = std::make_shared<RecordingReporter>();
    MainWindow window{MainWindow::Settings::Ignore};
    QString path;
};

TEST_F(QuantizedLinearPageTest, AQuantizedLinearIsOneNodeWithItsPartsBeneath) {
    const std::map<QString, std::pair<std::set<QString>, QString>> expected = {
        {QStringLiteral("gptq4-act"), {{"g_idx", "qweight", "qzeros", "scales"}, "int4 g128 act-order asym"}},
        {QStringLiteral("nvfp4"), {{"weight_global_scale", "weight_packed", "weight_scale"}, "nvfp4 g16"}},
        {QStringLiteral("fp8"), {{"weight", "weight_scale_inv"}, "fp8 block 128x128"}},
    };
    for (const auto& [method, parts] : expected) {
        ASSERT_TRUE(window.openPath(quantizedDemo(method))) << method.toStdString();
        const CheckpointTreeModel& model = *window.treePanel()->model();
        const QModelIndex node = moduleNodeOf(parts.first.begin()->toStdString());
        ASSERT_TRUE(node.isValid()) << method.toStdString();
        EXPECT_EQ(node.data().toString(), QStringLiteral("self_attn.q_proj"));
        std::set<QString> children;
        for (int r = 0; r < model.rowCount(node); ++r) children.insert(model.index(r, 0, node).data().toString());
        for (const QString& p : parts.first)
            EXPECT_TRUE(children.count(p)) << method.toStdString() << ": no " << p.toStdString();
        EXPECT_LE(children.size(), parts.first.size() + 1)
            << method.toStdString();  // + NVFP4's input_global_scale at most
        // The DType column says the scheme as briefly as "BF16"; the tooltip and the role say it all.
        const QString scheme = node.data(CheckpointTreeModel::QuantSchemeRole).toString();
        EXPECT_TRUE(scheme.startsWith(parts.second)) << method.toStdString() << ": " << scheme.toStdString();
        const QModelIndex dtype = node.siblingAtColumn(CheckpointTreeModel::DTypeColumn);
        EXPECT_EQ(dtype.data().toString(), parts.second.section(QLatin1Char(' '), 0, 0));
        EXPECT_TRUE(dtype.data(Qt::ToolTipRole).toString().contains(scheme));
        EXPECT_EQ(node.siblingAtColumn(CheckpointTreeModel::ShapeColumn).data().toString(),
                  QStringLiteral("[256, 256]"));
        // Selecting the node selects the linear's codes: every view is of the linear.
        EXPECT_FALSE(model.representativeTensor(node).isEmpty());
    }
    // A dense linear keeps its storage view.
    ASSERT_TRUE(window.openPath(kDemo));
    const QModelIndex dense = moduleNodeOf("weight");
    EXPECT_TRUE(dense.data(CheckpointTreeModel::QuantSchemeRole).toString().isEmpty());
    EXPECT_EQ(dense.siblingAtColumn(CheckpointTreeModel::DTypeColumn).data().toString(), QStringLiteral("BF16"));
}

// qweight [in/8, out] int32: bits 4j..4j+3 of word (r, n) hold the code of input 8r + j, output n.
TEST_F(QuantizedLinearPageTest, GptqCodeCountsAndGIdxAreTheStoredOnes) {
    const auto* v = openAndShow(QStringLiteral("gptq4-act"), "scales");  // any part shows the linear
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->linear.toStdString(), kQProj);
    const io::Checkpoint ck = io::Checkpoint::open(path.toStdString());
    std::map<int, std::uint64_t> counted;
    for (const std::int32_t word : int32s(ck.tensor(kQProj + ".qweight")))
        for (int j = 0; j < 8; ++j) ++counted[static_cast<int>((static_cast<std::uint32_t>(word) >> (4 * j)) & 0xFu)];
    ASSERT_EQ(v->usage.size(), 16u);
    for (int code = 0; code < 16; ++code) EXPECT_EQ(shownCounts(*v)[code], counted[code]) << "code " << code;

    const std::vector<std::int32_t> gIdx = int32s(ck.tensor(kQProj + ".g_idx"));
    const QCPGraph* graph = window.quantizedLinearPage()->gIdxPlot()->graph(0);
    ASSERT_NE(graph, nullptr);
    ASSERT_EQ(graph->dataCount(), static_cast<int>(gIdx.size()));
    bool permuted = false;
    for (std::size_t c = 0; c < gIdx.size(); ++c) {
        const auto point = graph->data()->at(static_cast<int>(c));
        ASSERT_EQ(point->key, double(c));
        ASSERT_EQ(point->value, double(gIdx[c])) << "column " << c;
        permuted = permuted || gIdx[c] != static_cast<std::int32_t>(c / 128);
    }
    EXPECT_TRUE(permuted);  // act-order: not the staircase c / 128
    EXPECT_TRUE(v->zeros.has_value());
    EXPECT_EQ(v->scales.count, 2u * 256u);  // two groups of 128 inputs per output
}

// weight_packed [out, in/2] bytes, the even input in the low nibble; FP8 weight one E4M3 byte each.
// gptq4 without act-order stores a g_idx of c / 128: the page says it is in column order, not that
// there is none (the tree lists it).
TEST_F(QuantizedLinearPageTest, AGIdxInColumnOrderIsSaidToBeThere) {
    const auto* v = openAndShow(QStringLiteral("gptq4"), "qweight");
    ASSERT_NE(v, nullptr);
    const io::Checkpoint ck = io::Checkpoint::open(path.toStdString());
    ASSERT_NE(ck.find(kQProj + ".g_idx"), nullptr);
    EXPECT_TRUE(v->gIdx.empty());
    EXPECT_TRUE(v->storesGIdx);
    EXPECT_EQ(window.quantizedLinearPage()->gIdxPlot()->graphCount(), 0);
}

TEST_F(QuantizedLinearPageTest, FloatCodeCountsAreTheStoredNibblesAndBytes) {
    const auto* v = openAndShow(QStringLiteral("nvfp4"), "weight_packed");
    ASSERT_NE(v, nullptr);
    {
        const io::Checkpoint ck = io::Checkpoint::open(path.toStdString());
        std::map<int, std::uint64_t> counted;
        for (const std::uint8_t b : bytesOf(ck.tensor(kQProj + ".weight_packed")))
            ++counted[b & 0xF], ++counted[b >> 4];
        ASSERT_EQ(v->usage.size(), 16u);
        for (int code = 0; code < 16; ++code) EXPECT_EQ(shownCounts(*v)[code], counted[code]) << "nibble " << code;
        EXPECT_EQ(v->usage.front().level, -6.0f);
        EXPECT_EQ(v->usage.back().level, 6.0f);
        EXPECT_FALSE(v->zeros.has_value());
        EXPECT_TRUE(v->gIdx.empty());
        EXPECT_FALSE(v->storesGIdx);
        EXPECT_TRUE(v->scaleNote.contains(QStringLiteral("E4M3 block scales"))) << v->scaleNote.toStdString();
        EXPECT_TRUE(v->scaleNote.contains(QStringLiteral("global scale"))) << v->scaleNote.toStdString();
        EXPECT_EQ(window.quantizedLinearPage()->gIdxPlot()->graphCount(), 0);
    }
    v = openAndShow(QStringLiteral("fp8"), "weight");
    ASSERT_NE(v, nullptr);
    const io::Checkpoint ck = io::Checkpoint::open(path.toStdString());
    std::map<int, std::uint64_t> counted;
    for (const std::uint8_t b : bytesOf(ck.tensor(kQProj + ".weight"))) ++counted[b];
    ASSERT_EQ(v->usage.size(), 256u);
    for (int code = 0; code < 256; ++code) EXPECT_EQ(shownCounts(*v)[code], counted[code]) << "byte " << code;
}

// decoded = (q - zero) * scale of the column's g_idx group (GPTQ v2 zeros), against the dense demo.
TEST_F(QuantizedLinearPageTest, TheRoundingErrorRmsIsDecodedMinusOriginal) {
    ASSERT_NE(openAndShow(QStringLiteral("gptq4-act"), "qweight"), nullptr);
    ASSERT_TRUE(window.compareWithOriginal(kDemo));
    const auto* v = waitForViews();
    ASSERT_NE(v, nullptr);
    ASSERT_TRUE(v->error.has_value()) << v->errorProblem.toStdString();

    const io::Checkpoint ck = io::Checkpoint::open(path.toStdString());
    const io::Checkpoint demo = io::Checkpoint::open(kDemo.toStdString());
    const std::vector<std::int32_t> qweight = int32s(ck.tensor(kQProj + ".qweight"));
    const std::vector<std::int32_t> qzeros = int32s(ck.tensor(kQProj + ".qzeros"));
    const std::vector<std::int32_t> gIdx = int32s(ck.tensor(kQProj + ".g_idx"));
    const std::vector<float> scales = ck.tensor(kQProj + ".scales").toF32();      // [groups, out] F16
    const std::vector<float> original = demo.tensor(kQProj + ".weight").toF32();  // [out, in] BF16
    const int in = 256, out = 256;
    auto field = [](std::int32_t word, int j) {
        return static_cast<int>((static_cast<std::uint32_t>(word) >> (4 * j)) & 0xFu);
    };
    double sum = 0.0;
    for (int i = 0; i < in; ++i) {
        const int g = gIdx[static_cast<std::size_t>(i)];
        for (int n = 0; n < out; ++n) {
            const int q = field(qweight[static_cast<std::size_t>((i / 8) * out + n)], i % 8);
            const int z = field(qzeros[static_cast<std::size_t>(g * (out / 8) + n / 8)], n % 8);
            const double w = (q - z) * double(scales[static_cast<std::size_t>(g * out + n)]);
            const double d = w - original[static_cast<std::size_t>(n * in + i)];
            sum += d * d;
        }
    }
    const double rms = std::sqrt(sum / (in * out));
    EXPECT_NEAR(v->errorRms, rms, 1e-6 * rms);
    EXPECT_EQ(v->error->count, static_cast<std::uint64_t>(in * out));
    EXPECT_TRUE(window.quantizedLinearPage()->captionText().contains(QStringLiteral("RMS error")));
    EXPECT_TRUE(reporter->messages.isEmpty()) << reporter->messages.join(QLatin1Char('\n')).toStdString();
}

TEST_F(QuantizedLinearPageTest, AnOriginalOfOtherNamesOrShapesIsRefusedInOneLine) {
    ASSERT_NE(openAndShow(QStringLiteral("gptq4-act"), "qweight"), nullptr);
    EXPECT_FALSE(window.compareWithOriginal(kStories));  // another model: 64-wide linears
    ASSERT_EQ(reporter->messages.size(), 1);
    EXPECT_FALSE(reporter->messages.front().contains(QLatin1Char('\n'))) << reporter->messages.front().toStdString();
    EXPECT_TRUE(window.quantizedLinearPage()->originalPath().isEmpty());
    EXPECT_FALSE(window.quantizedLinearPage()->views()->error.has_value());
}

TEST_F(QuantizedLinearPageTest, ADenseTensorSaysItIsNoQuantizedLinear) {
    ASSERT_NE(openAndShow(QStringLiteral("gptq4-act"), "qweight"), nullptr);
    window.selectTensor(QStringLiteral("model.embed_tokens.weight"));
    QuantizedLinearPage& page = *window.quantizedLinearPage();
    ASSERT_TRUE(waitUntil([&] { return !page.isBusy() && !page.views().has_value(); }));
    EXPECT_TRUE(page.captionText().contains(QStringLiteral("not part of a quantized linear")))
        << page.captionText().toStdString();
}

// The tab is there for quantized checkpoints only: a dense one keeps the six tabs a laptop fits.
TEST_F(QuantizedLinearPageTest, TheTabIsShownForQuantizedCheckpointsOnly) {
    const auto* tabs = window.findChild<QTabWidget*>();
    ASSERT_NE(tabs, nullptr);
    const int index = tabs->indexOf(window.quantizedLinearPage());
    ASSERT_GE(index, 0);
    ASSERT_TRUE(window.openPath(kDemo));
    EXPECT_FALSE(tabs->isTabVisible(index));
    ASSERT_TRUE(window.openPath(quantizedDemo(QStringLiteral("nvfp4"))));
    EXPECT_TRUE(tabs->isTabVisible(index));
}

}  // namespace
}  // namespace qs::gui::test
