// Spearman's rank correlation against the values scipy.stats.spearmanr documents and computes.
#include <gtest/gtest.h>

#include <cmath>

#include "qs/analysis/rank_correlation.h"

using qs::analysis::spearmanCorrelation;

TEST(RankCorrelation, MatchesScipyWithTies) {
    // scipy.stats.spearmanr([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]): the example of its documentation.
    EXPECT_NEAR(spearmanCorrelation({1, 2, 3, 4, 5}, {5, 6, 7, 8, 7}), 0.8207826816681233, 1e-12);
}

TEST(RankCorrelation, OrderNotValuesCounts) {
    EXPECT_DOUBLE_EQ(spearmanCorrelation({0.1, 0.2, 0.3}, {10, 200, 3000}), 1.0);
    EXPECT_DOUBLE_EQ(spearmanCorrelation({0.1, 0.2, 0.3}, {3, 2, 1}), -1.0);
    // One swapped neighbour among four: 1 - 6·2 / (4·15) = 0.8.
    EXPECT_NEAR(spearmanCorrelation({1, 2, 3, 4}, {1, 3, 2, 4}), 0.8, 1e-12);
    EXPECT_TRUE(std::isnan(spearmanCorrelation({1, 2}, {5, 5})));
    EXPECT_TRUE(std::isnan(spearmanCorrelation({1}, {1})));
}
