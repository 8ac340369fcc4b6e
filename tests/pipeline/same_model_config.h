#pragma once
// Test-only: two ModelConfigs describe the same model (a checkpoint and its copy in another container,
// e.g. a GGUF read back): every field the forward pass reads, `b` checked against `a`.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "qs/model/model_config.h"
#include "qs/model/model_config_fields.h"

namespace qs::test {

inline void expectSameModelConfig(const qs::model::ModelConfig& a, const qs::model::ModelConfig& b) {
    // The product's list (what eval refuses two different models by), then what it leaves out on purpose:
    // the context length and the tensor names, which a read-back must keep too.
    EXPECT_EQ(qs::model::forwardPassDifferences(a, b), std::vector<std::string>{});
    EXPECT_EQ(b.maxPositionEmbeddings, a.maxPositionEmbeddings);
    EXPECT_EQ(b.arch.preMlpNorm, a.arch.preMlpNorm);
    EXPECT_EQ(b.arch.attentionOutputNorm, a.arch.attentionOutputNorm);
    EXPECT_EQ(b.arch.mlpOutputNorm, a.arch.mlpOutputNorm);
    EXPECT_EQ(b.arch.fusedQkv, a.arch.fusedQkv);
    EXPECT_EQ(b.arch.fusedGateUp, a.arch.fusedGateUp);
    EXPECT_EQ(b.moe.names.block, a.moe.names.block);
    EXPECT_EQ(b.moe.names.gate, a.moe.names.gate);
    EXPECT_EQ(b.moe.names.up, a.moe.names.up);
    EXPECT_EQ(b.moe.names.down, a.moe.names.down);
}

}  // namespace qs::test
