#pragma once
// Helpers of the tests that compare two Job runs bit for bit (in RAM and with a work folder, resumed,
// with spilled hidden states): every field of the linears, the logs and the KL tables.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "qs/pipeline/job.h"

#include "synthetic_checkpoint.h"

namespace qs::test {

using namespace qs::pipeline;
namespace fs = std::filesystem;

inline fs::path tempDir(const std::string& name) {
    auto dir = fs::temp_directory_path() / ("qs_work_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    return dir;
}

// A 4-layer synthetic model, 128 wide, with an outlier channel, in a fresh folder named after `name`.
inline fs::path fourLayerCheckpoint(const std::string& name) {
    const fs::path checkpoint = tempDir(name);
    test::SyntheticModel model;
    model.layers = 4;
    model.hidden = 128;
    model.intermediate = 256;
    model.outlierChannels = {3};
    test::writeSyntheticCheckpoint(checkpoint, model);
    return checkpoint;
}

inline bool sameBits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

inline bool sameMatrix(const MatrixF& a, const MatrixF& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           std::memcmp(a.data(), b.data(), sizeof(float) * std::size_t(a.size())) == 0;
}

// Every field of two linears, bit for bit (NaN measurements included); the time taken only when `timed`.
inline void expectSameLinear(const quant::QuantizedLinear& a, const quant::QuantizedLinear& b, const std::string& what,
                             bool timed = true) {
    SCOPED_TRACE(what);
    EXPECT_EQ(a.method, b.method);
    EXPECT_EQ(a.codeKind, b.codeKind);
    EXPECT_EQ(a.rows, b.rows);
    EXPECT_EQ(a.cols, b.cols);
    EXPECT_EQ(a.bits, b.bits);
    EXPECT_EQ(a.groupSize, b.groupSize);
    EXPECT_EQ(a.symmetric, b.symmetric);
    EXPECT_EQ(a.blockRows, b.blockRows);
    EXPECT_EQ(a.blockCols, b.blockCols);
    EXPECT_EQ(a.codes, b.codes);
    EXPECT_TRUE(sameMatrix(a.scales, b.scales));
    EXPECT_TRUE(sameMatrix(a.zeros, b.zeros));
    EXPECT_EQ(a.gIdx, b.gIdx);
    EXPECT_TRUE(sameBits(a.globalScale, b.globalScale));
    EXPECT_EQ(a.inputScales, b.inputScales);
    EXPECT_EQ(a.scaleCodes, b.scaleCodes);
    EXPECT_EQ(a.scaleScales, b.scaleScales);
    EXPECT_TRUE(sameBits(a.scaleOffset, b.scaleOffset));
    EXPECT_EQ(a.trellis.L, b.trellis.L);
    EXPECT_EQ(a.trellis.K, b.trellis.K);
    EXPECT_EQ(a.trellis.groupSize, b.trellis.groupSize);
    EXPECT_EQ(a.trellis.rotationSeed, b.trellis.rotationSeed);
    EXPECT_EQ(a.trellis.starts, b.trellis.starts);
    EXPECT_EQ(a.input, b.input);
    EXPECT_TRUE(sameBits(a.cacheScale, b.cacheScale));
    EXPECT_EQ(a.ggmlType, b.ggmlType);
    EXPECT_EQ(a.blocks, b.blocks);
    EXPECT_EQ(a.inputSumSquares, b.inputSumSquares);
    EXPECT_EQ(a.inputCount, b.inputCount);
    EXPECT_TRUE(sameBits(a.outputError, b.outputError));
    EXPECT_TRUE(sameBits(a.gptqLoss, b.gptqLoss));
    EXPECT_TRUE(sameBits(a.outputMse, b.outputMse));
    EXPECT_TRUE(sameBits(a.dampPercent, b.dampPercent));
    if (timed) {
        EXPECT_TRUE(sameBits(a.seconds, b.seconds));
    }
}

inline JobPlan planFor(const fs::path& checkpoint, const std::string& methods) {
    JobPlan plan;
    plan.checkpoint = checkpoint;
    plan.methods = parseMethodList(methods, 32);
    plan.methods.front().kvCacheFp8 = true;  // the cache's scales per layer, and the cache-only stream
    plan.calibration = test::syntheticTokens(6, 48, 96, 21);
    plan.evaluation = test::syntheticTokens(3, 48, 96, 22);
    plan.perLayerKl = true;
    plan.perGroupKl = true;
    return plan;
}

inline void expectSameResult(const JobResult& a, const JobResult& b) {
    ASSERT_EQ(a.methods.size(), b.methods.size());
    for (std::size_t m = 0; m < a.methods.size(); ++m) {
        const MethodResult& x = a.methods[m];
        const MethodResult& y = b.methods[m];
        SCOPED_TRACE(x.label());
        ASSERT_TRUE(x.error.empty()) << x.error;
        EXPECT_EQ(x.error, y.error);
        EXPECT_TRUE(sameBits(x.kl.meanKld.value, y.kl.meanKld.value))
            << x.kl.meanKld.value << " vs " << y.kl.meanKld.value;
        EXPECT_TRUE(sameBits(x.kl.pplQ.value, y.kl.pplQ.value));
        EXPECT_EQ(x.kl.count, y.kl.count);
        ASSERT_EQ(x.perLayerKl.size(), y.perLayerKl.size());
        for (std::size_t l = 0; l < x.perLayerKl.size(); ++l)
            EXPECT_TRUE(sameBits(x.perLayerKl[l], y.perLayerKl[l])) << "layer " << l;
        EXPECT_EQ(x.perGroupKl, y.perGroupKl);
        EXPECT_TRUE(sameBits(x.bitsPerWeight, y.bitsPerWeight));
        EXPECT_EQ(x.checkpointBytes, y.checkpointBytes);
        ASSERT_EQ(x.modules.size(), y.modules.size());
        for (std::size_t i = 0; i < x.modules.size(); ++i) {
            EXPECT_EQ(x.modules[i].module, y.modules[i].module);
            EXPECT_EQ(x.modules[i].layer, y.modules[i].layer);
            EXPECT_TRUE(sameBits(x.modules[i].outputError, y.modules[i].outputError)) << x.modules[i].module;
            EXPECT_TRUE(sameBits(x.modules[i].loss, y.modules[i].loss));
            EXPECT_EQ(x.modules[i].samples, y.modules[i].samples);
        }
        ASSERT_EQ(layerCount(x), layerCount(y));  // in RAM or on disk (JobPlan::resultsOnDisk)
        for (std::size_t l = 0; l < layerCount(x); ++l) {
            const QuantizedLayer xl = layerAt(x, l), yl = layerAt(y, l);
            ASSERT_EQ(xl.size(), yl.size());
            for (const auto& [module, q] : xl) {
                ASSERT_TRUE(yl.contains(module));
                expectSameLinear(*q, *yl.at(module), "layer " + std::to_string(l) + " " + module, false);
            }
        }
    }
    ASSERT_EQ(a.kvCacheOnlyKl.has_value(), b.kvCacheOnlyKl.has_value());
    if (a.kvCacheOnlyKl) {
        EXPECT_TRUE(sameBits(a.kvCacheOnlyKl->meanKld.value, b.kvCacheOnlyKl->meanKld.value));
    }
}

}  // namespace qs::test
