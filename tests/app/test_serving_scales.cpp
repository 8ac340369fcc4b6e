// Activation and KV-cache quantization in the window: the Quantize panel offers W8A8 / W4A4 and the
// FP8 KV cache and passes them to the plan; the Activation scales tab plots what a W8A8 export with an
// FP8 cache stores (one series per linear's input and one each for k and v) and says so when a
// checkpoint stores none.
#include <filesystem>

#include <QCheckBox>
#include <unistd.h>

#include "qs/model/tokenizer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/job.h"

#include "pages/serving_scales_page.h"
#include "panels/quantize_panel.h"
#include "plots/serving_scales_plot.h"
#include "qt_test_support.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

// The demo quantized to FP8 W8A8 with an FP8 KV cache, written as ModelOpt FP8.
std::filesystem::path writeW8a8Export() {
    const std::filesystem::path demo = kDemo.toStdString();
    pipeline::JobPlan plan;
    plan.checkpoint = demo;
    plan.methods = {pipeline::parseMethod("fp8-w8a8")};
    plan.methods.front().kvCacheFp8 = true;
    const auto tokenizer = model::Tokenizer::fromFile(demo);
    plan.calibration =
        pipeline::tokenWindows(tokenizer, pipeline::loadTexts(demo / "calibration.txt"), 4, 64, "calibration.txt");
    const pipeline::JobResult result = pipeline::Job(std::move(plan)).run({}, CancelToken{});
    const auto dir = std::filesystem::temp_directory_path() / ("qs_app_w8a8_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    pipeline::exportCheckpoint({demo, dir, "modelopt-fp8", false, {}}, result.methods.front(), {}, CancelToken{});
    return dir;
}

class ServingScalesTest : public QtAppTest {
protected:
    MainWindow window{MainWindow::Settings::Ignore};
};

TEST_F(ServingScalesTest, TheTabPlotsTheScalesOfAW8a8Export) {
    const auto dir = writeW8a8Export();
    window.show();
    ASSERT_TRUE(window.openPath(QString::fromStdString(dir.string())));
    ASSERT_TRUE(window.showPage(QStringLiteral("scales")));
    const ServingScalesPage* page = window.servingScalesPage();
    EXPECT_EQ(page->plot()->scales().size(), 14u + 4u);  // 7 linears x 2 layers; k and v x 2 layers
    EXPECT_EQ(page->plot()->graphCount(), 7 + 2);        // a series per linear's input, k_scale, v_scale
    EXPECT_TRUE(page->captionText().contains(QStringLiteral("14 input scales, 4 KV-cache scales")))
        << page->captionText().toStdString();
    EXPECT_TRUE(page->captionText().contains(QStringLiteral("Largest input scale: model.layers.")));
    std::filesystem::remove_all(dir);
}

TEST_F(ServingScalesTest, ADenseCheckpointSaysItStoresNone) {
    window.show();
    ASSERT_TRUE(window.openPath(kDemo));
    EXPECT_TRUE(window.servingScalesPage()->plot()->scales().empty());
    EXPECT_TRUE(
        window.servingScalesPage()->captionText().contains(QStringLiteral("stores no activation or KV-cache scales")));
}

TEST_F(ServingScalesTest, TheQuantizePanelAsksForW8a8W4a4AndTheFp8Cache) {
    QuantizePanel* panel = window.quantizePanel();
    ASSERT_TRUE(panel->selectMethods({"fp8-w8a8", "fp8-w8a8-dynamic", "nvfp4-w4a4", "q8_0"}));
    auto* kv = panel->findChild<QCheckBox*>(QStringLiteral("kvCacheFp8"));
    ASSERT_NE(kv, nullptr);
    kv->setChecked(true);
    const QuantizeSettings settings = panel->settings();
    EXPECT_TRUE(settings.kvCacheFp8);
    const pipeline::JobPlan plan = buildPlan(settings, kDemo.toStdString());
    ASSERT_EQ(plan.methods.size(), 4u);
    EXPECT_EQ(plan.methods[0].activations, quant::ActivationFormat::Fp8Tensor);
    EXPECT_EQ(plan.methods[2].activations, quant::ActivationFormat::Nvfp4);
    EXPECT_TRUE(plan.methods[0].kvCacheFp8);
    EXPECT_FALSE(plan.methods[3].kvCacheFp8);  // a GGUF file keeps llama.cpp's cache
}

}  // namespace
}  // namespace qs::gui::test
