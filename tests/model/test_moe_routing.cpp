// The sigmoid, group-limited routing of GLM-4.5 and DeepSeek-V3 (transformers' Glm4MoeTopkRouter and
// DeepseekV3TopkRouter) on hand-computed cases, including the one where transformers and llama.cpp
// disagree: transformers masks the dropped groups' choice scores with 0, llama.cpp with -inf, so when
// every kept score is negative transformers picks experts of a dropped group. QuantScope follows
// transformers (the interop test's checkpoint keeps the scores positive, where both agree).
#include <gtest/gtest.h>

#include <cmath>

#include "qs/error.h"
#include "qs/model/moe_routing.h"

using namespace qs;
using namespace qs::model;

namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

MoeConfig sigmoidRouter(int groups, int keptGroups, int topK, double scale) {
    MoeConfig m;
    m.numExperts = 4;
    m.numExpertsPerToken = topK;
    m.scoring = RouterScoring::SigmoidGrouped;
    m.numGroups = groups;
    m.topkGroups = keptGroups;
    m.routedScalingFactor = scale;
    m.normTopkProb = true;
    return m;
}

MatrixF row(std::initializer_list<float> values) {
    MatrixF m(1, static_cast<Eigen::Index>(values.size()));
    Eigen::Index i = 0;
    for (float v : values) m(0, i++) = v;
    return m;
}

VectorF vec(std::initializer_list<float> values) {
    VectorF v(static_cast<Eigen::Index>(values.size()));
    Eigen::Index i = 0;
    for (float x : values) v[i++] = x;
    return v;
}

std::vector<int> chosen(const ExpertRouting& r) {
    std::vector<int> out;
    for (std::size_t e = 0; e < r.tokens.size(); ++e)
        if (!r.tokens[e].empty()) out.push_back(static_cast<int>(e));
    return out;
}

}  // namespace

// Experts {0, 1} and {2, 3}; sigmoid scores .5, .73, .88, .27; expert 0's bias +.3 makes its group's two
// best choices sum 1.53 against 1.15, so only experts 0 and 1 remain, though expert 2 scores highest.
// The weights are the plain sigmoid scores (not the biased ones), renormalised, times the scale.
TEST(SigmoidRouting, KeepsTheBestGroupAndWeighsByTheUnbiasedScores) {
    const MatrixF logits = row({0.0f, 1.0f, 2.0f, -1.0f});
    const ExpertRouting r = routeTokens(logits, sigmoidRouter(2, 1, 2, 2.0), vec({0.3f, 0.0f, 0.0f, 0.0f}));
    ASSERT_EQ(chosen(r), (std::vector<int>{0, 1}));
    const double s0 = sigmoid(0.0f), s1 = sigmoid(1.0f);
    EXPECT_NEAR(r.weights[0][0], s0 / (s0 + s1) * 2.0, 1e-6);
    EXPECT_NEAR(r.weights[1][0], s1 / (s0 + s1) * 2.0, 1e-6);
}

// One group: the top two biased choices anywhere (experts 2 and 0), nothing masked.
TEST(SigmoidRouting, OneGroupIsPlainTopKOfTheBiasedScores) {
    const MatrixF logits = row({0.0f, 1.0f, 2.0f, -1.0f});
    const ExpertRouting r = routeTokens(logits, sigmoidRouter(1, 1, 2, 1.0), vec({0.3f, 0.0f, 0.0f, 0.0f}));
    EXPECT_EQ(chosen(r), (std::vector<int>{0, 2}));
    // Without a correction bias expert 1 (.73) beats expert 0 (.5).
    EXPECT_EQ(chosen(routeTokens(logits, sigmoidRouter(1, 1, 2, 1.0), VectorF())), (std::vector<int>{1, 2}));
}

// Every bias -1: group {0, 1} stays (-.05 - .12 against -.99 - 1.0), its choices are negative, and the
// dropped group's are masked to 0, so transformers' top-2 takes experts 2 and 3 of the dropped group
// (llama.cpp's -inf mask would keep 0 and 1).
TEST(SigmoidRouting, FollowsTransformersZeroMaskWhereLlamaCppWouldDiffer) {
    const MatrixF logits = row({3.0f, 2.0f, -5.0f, -6.0f});
    const ExpertRouting r = routeTokens(logits, sigmoidRouter(2, 1, 2, 1.0), vec({-1.0f, -1.0f, -1.0f, -1.0f}));
    ASSERT_EQ(chosen(r), (std::vector<int>{2, 3}));
    const double s2 = sigmoid(-5.0f), s3 = sigmoid(-6.0f);
    EXPECT_NEAR(r.weights[2][0], s2 / (s2 + s3), 1e-6);
}

TEST(SigmoidRouting, WithoutRenormalisationTheScaledScoresStay) {
    MoeConfig m = sigmoidRouter(1, 1, 1, 2.5);
    m.normTopkProb = false;
    const ExpertRouting r = routeTokens(row({0.0f, 1.0f, 2.0f, -1.0f}), m, VectorF());
    ASSERT_EQ(chosen(r), (std::vector<int>{2}));
    EXPECT_NEAR(r.weights[2][0], sigmoid(2.0f) * 2.5, 1e-6);
}

TEST(SigmoidRouting, RefusesGroupsThatDoNotFit) {
    EXPECT_THROW(routeTokens(row({0, 0, 0, 0}), sigmoidRouter(3, 1, 2, 1.0), VectorF()), Error);    // 4 % 3
    EXPECT_THROW(routeTokens(row({0, 0, 0, 0}), sigmoidRouter(2, 3, 2, 1.0), VectorF()), Error);    // 3 of 2 kept
    EXPECT_THROW(routeTokens(row({0, 0, 0, 0}), sigmoidRouter(1, 1, 2, 1.0), vec({0, 0})), Error);  // 2 biases
}

// The softmax routers go through the same entry point unchanged.
TEST(SoftmaxRouting, MoeConfigEntryPointIsTheSoftmaxRouting) {
    MoeConfig m;
    m.numExperts = 4;
    m.numExpertsPerToken = 2;
    const MatrixF logits = row({0.0f, 1.0f, 2.0f, -1.0f});
    const ExpertRouting a = routeTokens(logits, m, VectorF()), b = routeTokens(logits, 2, true);
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_EQ(a.weights, b.weights);
}
