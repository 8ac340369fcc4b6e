#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <QMouseEvent>
#include <QTreeView>

#include "qs/analysis/histogram.h"

#include "models/channel_table_model.h"
#include "pages/channels_page.h"
#include "pages/histogram_page.h"
#include "pages/overview_page.h"
#include "plot_click.h"
#include "plots/plot_view.h"
#include "qt_test_support.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

class InspectorPagesTest : public QtAppTest {
protected:
    void SetUp() override {
        window.show();  // pages compute only while visible
        ASSERT_TRUE(window.openPath(kStories));
    }

    bool waitForIdle() {
        return waitUntil([this] { return !window.isBusy(); });
    }

    std::vector<float> values(const QString& tensor) {
        return window.checkpoint()->tensor(tensor.toStdString()).toF32();
    }

    MainWindow window{MainWindow::Settings::Ignore};
    ModelChecker channelChecker{window.channelsPage()->table()};
};

TEST_F(InspectorPagesTest, HistogramCountsSumToTheElementCount) {
    ASSERT_TRUE(waitForIdle());
    HistogramPage& page = *window.histogramPage();
    ASSERT_TRUE(page.histogram().has_value());
    EXPECT_EQ(page.shownTensor(), "model.layers.0.self_attn.q_proj.weight");
    const auto& counts = page.histogram()->counts;
    EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), std::uint64_t{0}), 64u * 64u);
    EXPECT_EQ(page.histogram()->bins(), 128);

    const QString down = QStringLiteral("model.layers.3.mlp.down_proj.weight");
    window.selectTensor(down);
    page.setBins(50);
    ASSERT_TRUE(waitForIdle());
    EXPECT_EQ(page.shownTensor(), down);
    const auto& h = *page.histogram();
    EXPECT_EQ(h.bins(), 50);
    EXPECT_EQ(std::accumulate(h.counts.begin(), h.counts.end(), std::uint64_t{0}), 64u * 172u);
    // What is drawn is the core's histogram of that tensor's values.
    analysis::HistogramOptions options;
    options.bins = 50;
    EXPECT_EQ(h.counts, analysis::computeHistogram(values(down), options).counts);
    EXPECT_TRUE(page.statsText().contains(down));
    EXPECT_TRUE(page.statsText().contains(QStringLiteral("σ %1").arg(QString::number(h.stddev, 'g', 6))));
}

TEST_F(InspectorPagesTest, NewerSelectionWinsOverAnOlderJob) {
    ASSERT_TRUE(waitForIdle());
    window.selectTensor(QStringLiteral("model.layers.1.mlp.up_proj.weight"));
    window.selectTensor(QStringLiteral("model.layers.4.self_attn.v_proj.weight"));
    ASSERT_TRUE(waitForIdle());
    EXPECT_EQ(window.histogramPage()->shownTensor(), "model.layers.4.self_attn.v_proj.weight");
    const auto& counts = window.histogramPage()->histogram()->counts;
    EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), std::uint64_t{0}), 32u * 64u);
}

TEST_F(InspectorPagesTest, ChannelTopKMatchesBruteForce) {
    ASSERT_TRUE(window.showPage(QStringLiteral("channels")));
    const QString gate = QStringLiteral("model.layers.1.mlp.gate_proj.weight");  // [172, 64]
    window.selectTensor(gate);
    ChannelsPage& page = *window.channelsPage();
    page.setTopK(8);
    ASSERT_TRUE(waitForIdle());
    ASSERT_TRUE(page.stats().has_value());
    EXPECT_EQ(page.shownTensor(), gate);

    const std::vector<float> w = values(gate);
    std::vector<float> inputMax(64, 0.0f), outputMax(172, 0.0f);
    for (std::size_t r = 0; r < 172; ++r) {
        for (std::size_t c = 0; c < 64; ++c) {
            inputMax[c] = std::max(inputMax[c], std::abs(w[r * 64 + c]));
            outputMax[r] = std::max(outputMax[r], std::abs(w[r * 64 + c]));
        }
    }
    auto bruteTop = [](const std::vector<float>& m) {
        std::vector<std::int64_t> order(m.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](auto a, auto b) { return m[std::size_t(a)] > m[std::size_t(b)]; });
        order.resize(8);
        return order;
    };
    auto shown = [&page] {
        std::vector<std::int64_t> channels;
        for (const auto& r : page.table()->ranks()) channels.push_back(r.channel);
        return channels;
    };
    EXPECT_EQ(page.stats()->inputMaxAbs, inputMax);
    EXPECT_EQ(shown(), bruteTop(inputMax));
    EXPECT_EQ(page.table()->rowCount(), 8);

    page.setAxis(analysis::ChannelAxis::Output);
    EXPECT_EQ(shown(), bruteTop(outputMax));
    EXPECT_EQ(page.table()->headerData(ChannelTableModel::ChannelColumn, Qt::Horizontal).toString(), "output row");
}

TEST_F(InspectorPagesTest, OverviewCellClickSelectsItsTensor) {
    ASSERT_TRUE(window.showPage(QStringLiteral("overview")));
    ASSERT_TRUE(waitForIdle());
    OverviewPage& page = *window.overviewPage();
    ASSERT_TRUE(page.overview().has_value());
    EXPECT_EQ(page.overview()->layers.size(), 5u);
    EXPECT_EQ(page.overview()->modules.size(), 7u);

    page.activateCell(2, 6);
    EXPECT_EQ(window.currentTensor(), "model.layers.2.mlp.down_proj.weight");

    // A real click on the cell of layer 1, module 0 (q_proj), through the plot's mouse handling.
    clickPlot(*page.plot(), 0.0, 1.0);
    EXPECT_EQ(window.currentTensor(), "model.layers.1.self_attn.q_proj.weight");
}

}  // namespace
}  // namespace qs::gui::test
