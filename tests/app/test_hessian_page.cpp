// The Hessian tab on the demo Qwen3: a short calibration of the selected linear's layer, diag(H)
// per input channel and GPTQ's act-order, on the device chosen in the Quantize panel (the numbers
// themselves are tested against the full Hessian in tests/pipeline/test_hessian_diagonals.cpp).
#include <algorithm>
#include <numeric>

#include <QComboBox>
#include <QProgressBar>
#include <QPushButton>

#include "pages/hessian_page.h"
#include "panels/quantize_panel.h"
#include "plots/plot_view.h"
#include "qt_test_support.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

using pipeline::HessianDiagonal;

class HessianPageTest : public QtAppTest {
protected:
    void SetUp() override {
        window.show();
        ASSERT_TRUE(window.openPath(kDemo));
        window.hessianPage()->setSampling(4, 64);
        ASSERT_TRUE(window.showPage(QStringLiteral("hessian")));
    }

    const HessianDiagonal* shownFor(const QString& tensor) {
        window.selectTensor(tensor);
        if (!waitUntil([this] { return !window.isBusy(); }, 60000)) return nullptr;
        return window.hessianPage()->shown();
    }

    MainWindow window{MainWindow::Settings::Ignore};
};

TEST_F(HessianPageTest, DiagonalPerInputChannelWithTheActOrderRank) {
    const HessianDiagonal* down = shownFor(QStringLiteral("model.layers.1.mlp.down_proj.weight"));
    ASSERT_NE(down, nullptr) << window.hessianPage()->captionText().toStdString();
    ASSERT_EQ(down->diagonal.size(), 768u);  // down_proj reads the intermediate activations
    EXPECT_TRUE(std::all_of(down->diagonal.begin(), down->diagonal.end(), [](double v) { return v >= 0.0; }));
    EXPECT_GT(*std::max_element(down->diagonal.begin(), down->diagonal.end()), 0.0);
    // The ranks are a permutation that orders the channels by descending H_cc.
    std::vector<int> byRank(down->diagonal.size(), -1);
    for (std::size_t c = 0; c < down->actOrderRank.size(); ++c)
        byRank[static_cast<std::size_t>(down->actOrderRank[c])] = static_cast<int>(c);
    ASSERT_TRUE(std::none_of(byRank.begin(), byRank.end(), [](int c) { return c < 0; }));
    for (std::size_t r = 1; r < byRank.size(); ++r)
        EXPECT_GE(down->diagonal[static_cast<std::size_t>(byRank[r - 1])],
                  down->diagonal[static_cast<std::size_t>(byRank[r])]);
    EXPECT_EQ(window.hessianPage()->plot()->graph(0)->dataCount(), 768);
}

TEST_F(HessianPageTest, LinearsThatShareAnInputShareItsDiagonal) {
    const HessianDiagonal* q = shownFor(QStringLiteral("model.layers.0.self_attn.q_proj.weight"));
    ASSERT_NE(q, nullptr) << window.hessianPage()->captionText().toStdString();
    const std::vector<double> qDiagonal = q->diagonal;
    EXPECT_EQ(qDiagonal.size(), 256u);
    // v_proj reads the same normed hidden states: the same H, without a second calibration.
    window.selectTensor(QStringLiteral("model.layers.0.self_attn.v_proj.weight"));
    EXPECT_FALSE(window.isBusy());
    const HessianDiagonal* v = window.hessianPage()->shown();
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->diagonal, qDiagonal);
    // o_proj reads the attention output: another input, another diagonal.
    window.selectTensor(QStringLiteral("model.layers.0.self_attn.o_proj.weight"));
    const HessianDiagonal* o = window.hessianPage()->shown();
    ASSERT_NE(o, nullptr);
    EXPECT_NE(o->diagonal, qDiagonal);
}

// While a layer calibrates, the page shows its progress and a Cancel button; cancelled, it says so and
// Calibrate starts it again; finished, the progress bar goes.
TEST_F(HessianPageTest, ACalibrationShowsItsProgressAndCancels) {
    HessianPage& page = *window.hessianPage();
    QPushButton& button = *page.calibrateButton();
    auto* progress = page.findChild<QProgressBar*>();
    ASSERT_NE(progress, nullptr);
    window.selectTensor(QStringLiteral("model.layers.1.mlp.down_proj.weight"));
    ASSERT_TRUE(page.isBusy());
    EXPECT_EQ(button.text(), QStringLiteral("Cancel"));
    EXPECT_TRUE(progress->isVisibleTo(&page));
    EXPECT_TRUE(page.captionText().startsWith(QStringLiteral("Calibrating layer 1")))
        << page.captionText().toStdString();

    button.click();
    EXPECT_FALSE(page.isBusy());
    EXPECT_EQ(page.shown(), nullptr);
    EXPECT_TRUE(page.captionText().contains(QStringLiteral("Cancelled"))) << page.captionText().toStdString();
    EXPECT_EQ(button.text(), QStringLiteral("Calibrate"));
    EXPECT_FALSE(progress->isVisibleTo(&page));
    ASSERT_TRUE(button.isEnabled());

    button.click();
    EXPECT_TRUE(page.isBusy());
    ASSERT_TRUE(waitUntil([&] { return !window.isBusy(); }, 60000));
    ASSERT_NE(page.shown(), nullptr) << page.captionText().toStdString();
    EXPECT_EQ(page.shown()->diagonal.size(), 768u);
    EXPECT_FALSE(progress->isVisibleTo(&page));
    EXPECT_EQ(button.text(), QStringLiteral("Recalibrate"));
}

TEST_F(HessianPageTest, ATensorThatIsNoLinearSaysSo) {
    window.selectTensor(QStringLiteral("model.embed_tokens.weight"));
    EXPECT_EQ(window.hessianPage()->shown(), nullptr);
    EXPECT_TRUE(window.hessianPage()->captionText().contains(QStringLiteral("not a decoder layer's linear")));
}

TEST_F(HessianPageTest, CalibratesOnTheDeviceChosenInTheQuantizePanel) {
    EXPECT_EQ(window.hessianPage()->device(), pipeline::DeviceChoice::Auto);
    auto* device = window.quantizePanel()->findChild<QComboBox*>(QStringLiteral("device"));
    ASSERT_NE(device, nullptr);
    device->setCurrentIndex(device->findData(static_cast<int>(pipeline::DeviceChoice::Cpu)));
    EXPECT_EQ(window.hessianPage()->device(), pipeline::DeviceChoice::Cpu);
    ASSERT_NE(shownFor(QStringLiteral("model.layers.0.mlp.up_proj.weight")), nullptr);
    // "CPU (N threads)": the team is sized to the cores free when the job starts, which another
    // process on the machine may change between here and there.
    EXPECT_TRUE(window.hessianPage()->captionText().contains(QStringLiteral("tokens on CPU")))
        << window.hessianPage()->captionText().toStdString();
}

// A mixture of experts: an expert's linear shows its diagonal (over every token, as the Job's default
// calibration sees it) and how many tokens the router sent it; the router says it has no Hessian; a
// gpt-oss tensor that stacks every expert says where the per-expert Hessians are.
class HessianPageOfAMixtureOfExperts : public QtAppTest {
protected:
    MainWindow window{MainWindow::Settings::Ignore};
};

TEST_F(HessianPageOfAMixtureOfExperts, ShowsEachExpertWithItsRoutedTokensAndSaysWhatHasNone) {
    window.show();
    ASSERT_TRUE(window.openPath(QString::fromUtf8(QS_TEST_DATA_DIR) + QStringLiteral("/moe/qwen3-moe-tiny")));
    window.hessianPage()->setSampling(2, 32);
    ASSERT_TRUE(window.showPage(QStringLiteral("hessian")));
    window.selectTensor(QStringLiteral("model.layers.1.mlp.experts.2.down_proj.weight"));
    ASSERT_TRUE(waitUntil([this] { return !window.isBusy(); }, 60000));
    const HessianDiagonal* down = window.hessianPage()->shown();
    ASSERT_NE(down, nullptr) << window.hessianPage()->captionText().toStdString();
    EXPECT_EQ(down->diagonal.size(), 16u);  // the experts' width
    EXPECT_GE(down->routedTokens, 0);
    EXPECT_LE(down->routedTokens, 64);
    EXPECT_TRUE(window.hessianPage()->captionText().contains(
        QStringLiteral("The router sent this expert %1 of the 64 tokens").arg(down->routedTokens)))
        << window.hessianPage()->captionText().toStdString();

    window.selectTensor(QStringLiteral("model.layers.1.mlp.gate.weight"));
    EXPECT_FALSE(window.isBusy()) << "the layer is calibrated already";
    EXPECT_EQ(window.hessianPage()->shown(), nullptr);
    EXPECT_TRUE(window.hessianPage()->captionText().contains(QStringLiteral("router, which stays dense")))
        << window.hessianPage()->captionText().toStdString();

    ASSERT_TRUE(window.openPath(QString::fromUtf8(QS_TEST_DATA_DIR) + QStringLiteral("/gptoss/gptoss-tiny")));
    window.selectTensor(QStringLiteral("model.layers.0.mlp.experts.gate_up_proj"));
    EXPECT_FALSE(window.hessianPage()->isBusy()) << "nothing to calibrate";
    EXPECT_TRUE(
        window.hessianPage()->captionText().contains(QStringLiteral("holds every expert stacked in one tensor")))
        << window.hessianPage()->captionText().toStdString();
}

}  // namespace

}  // namespace qs::gui::test
