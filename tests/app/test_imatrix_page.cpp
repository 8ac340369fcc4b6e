// llama.cpp's imatrix in the app: File ▸ Save imatrix of the Last Run… writes the calibration of a GGUF
// method's job; File ▸ Open imatrix… shows it in the Importance tab (each linear's mean importance, the
// selected linear's per column, both as the Job measured them; a click on the map selects the linear); the
// Quantize panel's GGUF methods then weigh by it: a job calibrated on other text gets the very codes of the
// run the imatrix came from, and without it other codes. What is not an imatrix is refused in one line.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <QCheckBox>
#include <QTabWidget>
#include <QTemporaryDir>

#include "qs/pipeline/job_result.h"

#include "jobs/quantize_job.h"
#include "pages/imatrix_page.h"
#include "pages/results_page.h"
#include "panels/quantize_panel.h"
#include "plot_click.h"
#include "plots/importance_map.h"
#include "qt_test_support.h"
#include "recording_reporter.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

// Every linear's ggml blocks, by layer and module (read back from the run folder of a result on disk).
std::map<std::string, std::vector<std::uint8_t>> blocksOf(const pipeline::MethodResult& m) {
    std::map<std::string, std::vector<std::uint8_t>> out;
    for (std::size_t l = 0; l < pipeline::layerCount(m); ++l)
        for (const auto& [module, q] : pipeline::layerAt(m, l)) out[std::to_string(l) + "." + module] = q->blocks;
    return out;
}

class ImatrixPageTest : public QtAppTest {
protected:
    void SetUp() override {
        window.setErrorReporter(reporter);
        window.show();
        ASSERT_TRUE(window.openPath(kDemo));
        QObject::connect(window.quantizeJob(), &QuantizeJob::finished, [this](const JobResultPtr& r) { result = r; });
    }

    // The Quantize panel's Q4_K_M on `samples` calibration sequences; its result.
    JobResultPtr runQ4km(int samples) {
        result.reset();
        window.quantizePanel()->setSampling(samples, 64, 2);
        EXPECT_TRUE(window.quantizePanel()->selectMethods({"q4_k_m"}));
        EXPECT_TRUE(window.startQuantizeJob());
        EXPECT_TRUE(waitUntil([this] { return !window.quantizeJob()->isRunning(); }, 120000));
        return result;
    }

    bool tabShown() const {
        QTabWidget* tabs = window.findChild<QTabWidget*>();
        return tabs->isTabVisible(tabs->indexOf(window.imatrixPage()));
    }

    MainWindow window{MainWindow::Settings::Ignore};
    std::shared_ptr<RecordingReporter> reporter = std::make_shared<RecordingReporter>();
    JobResultPtr result;
    QTemporaryDir scratch;
};

TEST_F(ImatrixPageTest, SavedOpenedShownAndWeighingTheGgufMethods) {
    EXPECT_FALSE(window.canSaveImatrix());  // no run yet
    EXPECT_FALSE(tabShown());
    const JobResultPtr first = runQ4km(4);
    ASSERT_TRUE(first);
    ASSERT_TRUE(window.canSaveImatrix());
    const QString file = scratch.filePath(QStringLiteral("demo.imatrix.gguf"));
    ASSERT_TRUE(window.saveImatrix(file)) << reporter->reports.join('\n').toStdString();

    ImatrixPage& page = *window.imatrixPage();
    window.openImatrix(file);
    ASSERT_TRUE(waitUntil([&] { return !page.imatrixPath().isEmpty(); }));
    EXPECT_TRUE(tabShown());
    ASSERT_TRUE(page.coverage());
    EXPECT_EQ(page.coverage()->covered, 14u);
    EXPECT_EQ(page.coverage()->linears, 14u);
    EXPECT_EQ(page.map()->map().cells.size(), 14u);
    EXPECT_TRUE(page.captionText().contains(QStringLiteral("4 chunks of 64 tokens")))
        << page.captionText().toStdString();

    // The selected linear's columns: the Job's Σx² / tokens, bit for bit.
    ASSERT_TRUE(window.showPage(QStringLiteral("imatrix")));
    window.selectTensor(QStringLiteral("model.layers.1.mlp.down_proj.weight"));
    const auto& layer1 = pipeline::linearHeaders(first->methods.front())[1];
    const auto down =
        std::find_if(layer1.begin(), layer1.end(), [](const auto& e) { return e.first == "mlp.down_proj"; });
    ASSERT_NE(down, layer1.end());
    const quant::QuantizedLinear& q = *down->second;
    ASSERT_EQ(page.columns().size(), q.inputSumSquares.size());
    for (std::size_t c = 0; c < q.inputSumSquares.size(); ++c)
        ASSERT_EQ(page.columns()[c], q.inputSumSquares[c] / float(q.inputCount)) << "column " << c;

    // A click on layer 0's attn_v cell selects that linear.
    const auto& kinds = page.map()->map().kinds;
    const auto attnV = std::find(kinds.begin(), kinds.end(), "attn_v");
    ASSERT_NE(attnV, kinds.end());
    clickPlot(*page.map(), double(attnV - kinds.begin()), 0.0);
    EXPECT_EQ(window.currentTensor(), QStringLiteral("model.layers.0.self_attn.v_proj.weight"));

    // Weighed by the imatrix, a run on other calibration gets the first run's very codes; without it, others.
    QCheckBox* use = window.quantizePanel()->findChild<QCheckBox*>(QStringLiteral("useImatrix"));
    ASSERT_NE(use, nullptr);
    EXPECT_TRUE(use->isChecked());
    EXPECT_EQ(window.quantizePanel()->settings().imatrixFile, file);
    const JobResultPtr weighed = runQ4km(2);
    ASSERT_TRUE(weighed);
    EXPECT_EQ(blocksOf(weighed->methods.front()), blocksOf(first->methods.front()));
    use->setChecked(false);
    EXPECT_TRUE(window.quantizePanel()->settings().imatrixFile.isEmpty());
    const JobResultPtr own = runQ4km(2);
    ASSERT_TRUE(own);
    EXPECT_NE(blocksOf(own->methods.front()), blocksOf(first->methods.front()));
}

TEST_F(ImatrixPageTest, WhatIsNotAnImatrixIsRefusedAndTheTabStaysHidden) {
    window.openImatrix(QDir(kDemo).filePath(QStringLiteral("model.safetensors")));
    ASSERT_TRUE(waitUntil([&] { return !reporter->reports.isEmpty(); }));
    EXPECT_TRUE(reporter->reports.front().contains(QStringLiteral("imatrix")))
        << reporter->reports.front().toStdString();
    EXPECT_TRUE(window.imatrixPage()->imatrixPath().isEmpty());
    EXPECT_FALSE(tabShown());
    EXPECT_FALSE(window.saveImatrix(scratch.filePath(QStringLiteral("none.gguf"))));  // no run: says why
}

}  // namespace
}  // namespace qs::gui::test
