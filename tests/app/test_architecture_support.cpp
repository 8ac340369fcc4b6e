// The Quantize panel on a checkpoint whose architecture QuantScope does not run: the stories260K
// weights under a config.json that names another model_type. The methods that read activations (or
// write GGUF) are off, each saying why in the core's words; the weight-only ones stay; Start is off
// and says which command quantizes the model without a forward pass. Opening a supported model puts
// every method back, with the user's ticks kept.
#include <filesystem>
#include <fstream>

#include <QCheckBox>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPushButton>
#include <QTemporaryDir>

#include "panels/forward_pass_support.h"
#include "panels/quantize_panel.h"
#include "qt_test_support.h"
#include "recording_reporter.h"
#include "window/error_reporter.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

// stories260K with `model_type` replaced.
QString storiesAs(const QTemporaryDir& dir, const QString& modelType) {
    const std::filesystem::path from = kStories.toStdString();
    const std::filesystem::path to = dir.filePath(QStringLiteral("model")).toStdString();
    std::filesystem::create_directories(to);
    std::filesystem::copy_file(from / "model.safetensors", to / "model.safetensors");
    QFile in(QString::fromStdString((from / "config.json").string()));
    EXPECT_TRUE(in.open(QIODevice::ReadOnly));
    QJsonObject config = QJsonDocument::fromJson(in.readAll()).object();
    config[QStringLiteral("model_type")] = modelType;
    QFile out(QString::fromStdString((to / "config.json").string()));
    EXPECT_TRUE(out.open(QIODevice::WriteOnly));
    out.write(QJsonDocument(config).toJson());
    return QString::fromStdString(to.string());
}

class ArchitectureSupportTest : public QtAppTest {
protected:
    QuantizePanel& panel() { return *window.quantizePanel(); }
    MainWindow window{MainWindow::Settings::Ignore};
    QTemporaryDir dir;
};

TEST_F(ArchitectureSupportTest, WithoutAForwardPassOnlyTheWeightOnlyMethodsStay) {
    ASSERT_TRUE(window.openPath(storiesAs(dir, QStringLiteral("mamba2"))));
    // Opening and inspecting work as for any checkpoint.
    EXPECT_EQ(window.currentTensor(), QStringLiteral("model.layers.0.self_attn.q_proj.weight"));
    EXPECT_TRUE(panel().forwardPassRefusal().contains(QStringLiteral("model_type 'mamba2' is not supported")))
        << panel().forwardPassRefusal().toStdString();
    for (const char* method : {"gptq4", "gptq4-act", "awq4", "fp8-w8a8", "fp8-w8a8-dynamic", "nvfp4-w4a4"}) {
        EXPECT_FALSE(panel().methodAvailable(method)) << method;
        EXPECT_TRUE(panel().methodToolTip(method).contains(QStringLiteral("needs a forward pass"))) << method;
    }
    for (const char* method : {"q4_k_m", "q8_0"}) {
        EXPECT_FALSE(panel().methodAvailable(method)) << method;
        EXPECT_TRUE(panel().methodToolTip(method).contains(QStringLiteral("GGUF"))) << method;
    }
    for (const char* method : {"rtn4", "fp8", "mxfp4", "nvfp4", "nf4", "trellis2"}) {
        EXPECT_TRUE(panel().methodAvailable(method)) << method;
        EXPECT_FALSE(panel().methodToolTip(method).startsWith(QStringLiteral("Not for this model"))) << method;
    }
    // The panel has no weights-only run: Start is off and names the command that has one.
    ASSERT_TRUE(panel().selectMethods({"rtn4"}));
    EXPECT_FALSE(panel().startButton()->isEnabled());
    EXPECT_TRUE(panel().startButton()->toolTip().contains(QStringLiteral("--weights-only")));
    EXPECT_TRUE(panel().startButton()->toolTip().contains(panel().forwardPassRefusal()));
    auto recorder = std::make_shared<RecordingReporter>();
    window.setErrorReporter(recorder);
    EXPECT_FALSE(window.startQuantizeJob());  // as the menu or a script would: refused with the same reason
    ASSERT_EQ(recorder->reports.size(), 1);
    EXPECT_TRUE(recorder->reports.front().contains(QStringLiteral("--weights-only")))
        << recorder->reports.front().toStdString();
    EXPECT_FALSE(panel().isEstimating());  // an estimate would only fail: none is made
}

TEST_F(ArchitectureSupportTest, ASupportedModelPutsEveryMethodBackWithTheTicksKept) {
    ASSERT_TRUE(window.openPath(storiesAs(dir, QStringLiteral("mamba2"))));
    ASSERT_TRUE(panel().selectMethods({"rtn4", "gptq4"}));
    EXPECT_EQ(panel().settings().methods.size(), 1u);  // GPTQ's tick is kept, but off for this model
    ASSERT_TRUE(window.openPath(kStories));
    EXPECT_TRUE(panel().forwardPassRefusal().isEmpty());
    EXPECT_TRUE(panel().refusal().isEmpty());
    for (const char* method : {"gptq4", "awq4", "q4_k_m", "fp8-w8a8", "rtn4"})
        EXPECT_TRUE(panel().methodAvailable(method)) << method;
    EXPECT_FALSE(panel().methodToolTip("gptq4").startsWith(QStringLiteral("Not for this model")));
    ASSERT_EQ(panel().settings().methods.size(), 2u);
    EXPECT_EQ(panel().settings().methods[1].name, "gptq4");
    EXPECT_TRUE(panel().startButton()->isEnabled());
}

TEST(ForwardPassSupportTest, ReasonsComeFromTheCore) {
    EXPECT_TRUE(methodRefusalWithoutForwardPass("rtn4").isEmpty());
    EXPECT_TRUE(methodRefusalWithoutForwardPass("nf4").isEmpty());
    EXPECT_TRUE(methodRefusalWithoutForwardPass("gptq3").contains(QStringLiteral("activations")));
    EXPECT_TRUE(methodRefusalWithoutForwardPass("q6_k").contains(QStringLiteral("GGUF")));
}

}  // namespace
}  // namespace qs::gui::test
