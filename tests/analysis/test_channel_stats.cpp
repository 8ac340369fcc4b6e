#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "qs/analysis/channel_stats.h"
#include "qs/error.h"

namespace qs::analysis {
namespace {

struct Matrix {
    std::int64_t rows, cols;
    std::vector<float> values;
    float at(std::int64_t r, std::int64_t c) const { return values[static_cast<std::size_t>(r * cols + c)]; }
};

Matrix randomMatrixWithOutliers(std::int64_t rows, std::int64_t cols) {
    std::mt19937 rng(42);
    std::normal_distribution<float> normal(0.0f, 0.05f);
    Matrix m{rows, cols, std::vector<float>(static_cast<std::size_t>(rows * cols))};
    for (float& v : m.values) v = normal(rng);
    m.values[static_cast<std::size_t>(17 * cols + 7)] = -2.0f;    // input channel 7, row 17
    m.values[static_cast<std::size_t>(250 * cols + 300)] = 1.5f;  // input channel 300, row 250
    for (std::int64_t c = 0; c < cols; c += 3) m.values[static_cast<std::size_t>(5 * cols + c)] = 0.9f;
    return m;
}

// The brute force: every channel's maximum by a plain double loop, ranked by a full sort.
std::vector<ChannelRank> bruteForceTop(const std::vector<float>& maxAbs, int k) {
    std::vector<ChannelRank> all;
    for (std::size_t i = 0; i < maxAbs.size(); ++i) all.push_back({static_cast<std::int64_t>(i), maxAbs[i], 0.0f});
    std::stable_sort(all.begin(), all.end(),
                     [](const ChannelRank& a, const ChannelRank& b) { return a.maxAbs > b.maxAbs; });
    all.resize(std::min<std::size_t>(all.size(), static_cast<std::size_t>(k)));
    return all;
}

TEST(ChannelStats, MaximaAndTopKMatchBruteForce) {
    const Matrix m = randomMatrixWithOutliers(300, 517);  // 126 rows per chunk: three chunks
    ChannelStatsOptions options;
    options.topK = 10;
    const ChannelStats s = computeChannelStats(m.values, m.rows, m.cols, options);
    ASSERT_EQ(s.rows, 300);
    ASSERT_EQ(s.cols, 517);

    std::vector<float> inputMax(517, 0.0f), outputMax(300, 0.0f);
    for (std::int64_t r = 0; r < m.rows; ++r) {
        for (std::int64_t c = 0; c < m.cols; ++c) {
            inputMax[static_cast<std::size_t>(c)] =
                std::max(inputMax[static_cast<std::size_t>(c)], std::abs(m.at(r, c)));
            outputMax[static_cast<std::size_t>(r)] =
                std::max(outputMax[static_cast<std::size_t>(r)], std::abs(m.at(r, c)));
        }
    }
    EXPECT_EQ(s.inputMaxAbs, inputMax);
    EXPECT_EQ(s.outputMaxAbs, outputMax);

    for (const auto& [got, want] :
         {std::pair{s.topInputs, bruteForceTop(inputMax, 10)}, std::pair{s.topOutputs, bruteForceTop(outputMax, 10)}}) {
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
            EXPECT_EQ(got[i].channel, want[i].channel) << "rank " << i;
            EXPECT_EQ(got[i].maxAbs, want[i].maxAbs) << "rank " << i;
        }
    }
    EXPECT_EQ(s.topInputs[0].channel, 7);
    EXPECT_EQ(s.topInputs[1].channel, 300);
    EXPECT_EQ(s.topOutputs[0].channel, 17);
    EXPECT_EQ(s.topOutputs[1].channel, 250);
    EXPECT_EQ(s.topOutputs[2].channel, 5);

    std::vector<float> sorted = inputMax;
    std::nth_element(sorted.begin(), sorted.begin() + 258, sorted.end());
    EXPECT_FLOAT_EQ(s.topInputs[0].ratioToMedian, 2.0f / sorted[258]);
}

TEST(ChannelStats, TopChannelsBreaksTiesByIndexAndClampsK) {
    const std::vector<float> v = {1.0f, 3.0f, 3.0f, 2.0f};
    const auto top = topChannels(v, 3);
    ASSERT_EQ(top.size(), 3u);
    EXPECT_EQ(top[0].channel, 1);
    EXPECT_EQ(top[1].channel, 2);
    EXPECT_EQ(top[2].channel, 3);
    EXPECT_FLOAT_EQ(top[0].ratioToMedian, 3.0f / 3.0f);  // upper median of {1,2,3,3} is 3
    EXPECT_EQ(topChannels(v, 10).size(), 4u);
    EXPECT_TRUE(topChannels(v, 0).empty());
}

TEST(ChannelStats, VectorIsOneRow) {
    const std::vector<float> v = {0.5f, -4.0f, 1.0f};
    const ChannelStats s = computeChannelStats(v, 1, 3);
    EXPECT_EQ(s.inputMaxAbs, (std::vector<float>{0.5f, 4.0f, 1.0f}));
    EXPECT_EQ(s.outputMaxAbs, (std::vector<float>{4.0f}));
}

TEST(ChannelStats, RejectsAMismatchedShapeAndHonoursCancel) {
    const std::vector<float> v(6, 1.0f);
    EXPECT_THROW(computeChannelStats(v, 4, 2), Error);
    ChannelStatsOptions options;
    options.cancel.cancel();
    EXPECT_THROW(computeChannelStats(v, 2, 3, options), Cancelled);
}

}  // namespace
}  // namespace qs::analysis
