// The Outliers tab's "After --rotate": the selected linear's input-channel maxima as --rotate quantizes it (norm
// folded, rotated with seed 0) beside the stored ones, equal to the maxima of model::rotatedLinearWeight's matrix,
// and for a model that cannot fold the rotation the refusal's line instead of a second series.
#include <algorithm>
#include <cmath>
#include <vector>

#include <QCheckBox>

#include "qs/io/checkpoint.h"
#include "qs/model/rotated_linear.h"

#include "pages/channels_page.h"
#include "qt_test_support.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

class RotatedChannelsTest : public QtAppTest {
protected:
    void SetUp() override { window.show(); }  // pages compute only while visible

    bool waitForIdle() {
        return waitUntil([this] { return !window.isBusy(); });
    }

    MainWindow window{MainWindow::Settings::Ignore};
};

TEST_F(RotatedChannelsTest, ShowsTheRotatedLinearsInputMaxima) {
    ASSERT_TRUE(window.openPath(kDemo));
    ASSERT_TRUE(window.showPage(QStringLiteral("channels")));
    const QString gate = QStringLiteral("model.layers.1.mlp.gate_proj.weight");  // [768, 256]
    window.selectTensor(gate);
    ChannelsPage& page = *window.channelsPage();
    ASSERT_TRUE(waitForIdle());
    EXPECT_FALSE(page.rotatedStats().has_value());  // off by default
    ASSERT_NE(page.findChild<QCheckBox*>(QStringLiteral("afterRotate")), nullptr);
    page.setShowRotated(true);
    ASSERT_TRUE(waitForIdle());
    ASSERT_TRUE(page.rotatedStats().has_value());
    ASSERT_TRUE(page.stats().has_value());

    const MatrixF w = model::rotatedLinearWeight(io::Checkpoint::open(kDemo.toStdString()), gate.toStdString(), 0);
    std::vector<float> inputMax(static_cast<std::size_t>(w.cols()), 0.0f);
    for (Eigen::Index r = 0; r < w.rows(); ++r)
        for (Eigen::Index c = 0; c < w.cols(); ++c)
            inputMax[std::size_t(c)] = std::max(inputMax[std::size_t(c)], std::abs(w(r, c)));
    EXPECT_EQ(page.rotatedStats()->inputMaxAbs, inputMax);
    EXPECT_NE(page.rotatedStats()->inputMaxAbs, page.stats()->inputMaxAbs);
    EXPECT_TRUE(page.captionText().contains(QStringLiteral("After --rotate"))) << page.captionText().toStdString();
}

TEST_F(RotatedChannelsTest, AModelThatCannotFoldItSaysWhy) {
    ASSERT_TRUE(window.openPath(QStringLiteral(QS_TEST_DATA_DIR "/gemma3/gemma3-text-tiny")));
    ASSERT_TRUE(window.showPage(QStringLiteral("channels")));
    ChannelsPage& page = *window.channelsPage();
    page.setShowRotated(true);
    window.selectTensor(QStringLiteral("model.layers.0.self_attn.q_proj.weight"));
    ASSERT_TRUE(waitForIdle());
    ASSERT_TRUE(page.stats().has_value());  // the stored weight's, as always
    EXPECT_FALSE(page.rotatedStats().has_value());
    EXPECT_TRUE(page.rotationNote().contains(QStringLiteral("sandwich norms"))) << page.rotationNote().toStdString();
    EXPECT_TRUE(page.captionText().contains(QStringLiteral("Not shown after --rotate")));
}

}  // namespace
}  // namespace qs::gui::test
