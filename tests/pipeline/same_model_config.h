#pragma once
// Test-only: two ModelConfigs describe the same model (a checkpoint and its copy in another container,
// e.g. a GGUF read back): every field the forward pass reads, `b` checked against `a`.
#include <gtest/gtest.h>

#include "qs/model/model_config.h"

namespace qs::test {

inline void expectSameModelConfig(const qs::model::ModelConfig& a, const qs::model::ModelConfig& b) {
    EXPECT_EQ(b.modelType, a.modelType);
    EXPECT_EQ(b.hiddenSize, a.hiddenSize);
    EXPECT_EQ(b.intermediateSize, a.intermediateSize);
    EXPECT_EQ(b.numLayers, a.numLayers);
    EXPECT_EQ(b.numHeads, a.numHeads);
    EXPECT_EQ(b.numKvHeads, a.numKvHeads);
    EXPECT_EQ(b.headDim, a.headDim);
    EXPECT_EQ(b.vocabSize, a.vocabSize);
    EXPECT_EQ(b.maxPositionEmbeddings, a.maxPositionEmbeddings);
    EXPECT_EQ(b.rmsNormEps, a.rmsNormEps);
    EXPECT_EQ(b.ropeTheta, a.ropeTheta);
    EXPECT_EQ(b.ropeScaling.type, a.ropeScaling.type);
    EXPECT_EQ(b.ropeScaling.factor, a.ropeScaling.factor);
    EXPECT_EQ(b.ropeScaling.shortFactor, a.ropeScaling.shortFactor);
    EXPECT_EQ(b.ropeScaling.longFactor, a.ropeScaling.longFactor);
    EXPECT_EQ(b.ropeScaling.attentionFactor, a.ropeScaling.attentionFactor);
    if (a.ropeScaling.type != qs::model::RopeScalingType::None) {
        EXPECT_EQ(b.ropeScaling.originalMaxPositionEmbeddings, a.ropeScaling.originalMaxPositionEmbeddings);
    }
    EXPECT_EQ(b.rotaryDims(), a.rotaryDims());
    EXPECT_EQ(b.tieWordEmbeddings, a.tieWordEmbeddings);
    EXPECT_EQ(b.qkvBias, a.qkvBias);
    EXPECT_EQ(b.outputBias, a.outputBias);
    EXPECT_EQ(b.mlpBias, a.mlpBias);
    EXPECT_EQ(b.qkNorm, a.qkNorm);
    EXPECT_EQ(b.slidingWindow, a.slidingWindow);
    EXPECT_EQ(b.slidingLayers, a.slidingLayers);
    EXPECT_EQ(b.ropeLocalTheta, a.ropeLocalTheta);
    EXPECT_EQ(b.queryPreAttnScalar, a.queryPreAttnScalar);
    EXPECT_EQ(b.embeddingScale, a.embeddingScale);
    EXPECT_EQ(b.arch.normOffset, a.arch.normOffset);
    EXPECT_EQ(b.arch.preMlpNorm, a.arch.preMlpNorm);
    EXPECT_EQ(b.arch.attentionOutputNorm, a.arch.attentionOutputNorm);
    EXPECT_EQ(b.arch.mlpOutputNorm, a.arch.mlpOutputNorm);
    EXPECT_EQ(b.arch.activation, a.arch.activation);
    EXPECT_EQ(b.arch.fusedQkv, a.arch.fusedQkv);
    EXPECT_EQ(b.arch.fusedGateUp, a.arch.fusedGateUp);
    EXPECT_EQ(b.moe.numExperts, a.moe.numExperts);
    EXPECT_EQ(b.moe.numExpertsPerToken, a.moe.numExpertsPerToken);
    EXPECT_EQ(b.moe.expertIntermediateSize, a.moe.expertIntermediateSize);
    EXPECT_EQ(b.moe.normTopkProb, a.moe.normTopkProb);
    EXPECT_EQ(b.moe.sparseStep, a.moe.sparseStep);
    EXPECT_EQ(b.moe.denseLayers, a.moe.denseLayers);
    EXPECT_EQ(b.moe.names.block, a.moe.names.block);
    EXPECT_EQ(b.moe.names.gate, a.moe.names.gate);
    EXPECT_EQ(b.moe.names.up, a.moe.names.up);
    EXPECT_EQ(b.moe.names.down, a.moe.names.down);
}

}  // namespace qs::test
