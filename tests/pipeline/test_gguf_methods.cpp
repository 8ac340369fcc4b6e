// GGUF methods (q4_k_m, q6_k, q8_0, ...): the names, llama.cpp's per-tensor rules on a Llama-8B-shaped
// plan (the layers the _M mixes single out, from the formula in llama.cpp's source restated here), a
// Job on the demo whose linears are ggml blocks, and the file written from that result: its linears
// are those very bytes, its token_embd the mix's type, and evaluating the file gives the KL the Job
// measured. The imatrix written from the calibration holds the Σx² the linears were encoded with.
// (tests/interop checks the same rules, the imatrix and the KL against llama.cpp itself.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/gguf_file.h"
#include "qs/model/tokenizer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/checkpoint_eval.h"
#include "qs/pipeline/gguf_imatrix.h"
#include "qs/pipeline/gguf_result_export.h"
#include "qs/pipeline/gguf_type_mix.h"
#include "qs/pipeline/job.h"
#include "qs/quant/ggml_encode.h"
#include "qs/quant/ggml_linear.h"

#include "io_test_util.h"

using namespace qs;
using namespace qs::pipeline;
using qs::io::test::TempDir;
using testing::HasSubstr;
using T = io::GgmlType;

namespace {

namespace fs = std::filesystem;

const fs::path kDemo = fs::path(QS_RESOURCES_DIR) / "demo";

model::ModelConfig llama8B() {
    model::ModelConfig c;
    c.modelType = "llama";
    c.hiddenSize = 4096;
    c.intermediateSize = 14336;
    c.numLayers = 32;
    c.numHeads = 32;
    c.numKvHeads = 8;
    c.headDim = 128;
    c.vocabSize = 128256;
    c.maxPositionEmbeddings = 8192;
    return c;
}

std::map<std::string, T> typesOf(const std::string& method, const model::ModelConfig& config, bool importance = false) {
    const GgufTypeChooser chooser = ggufMixChooser(*ggufFileTypeNamed(method), config, importance);
    std::map<std::string, T> out;
    for (const auto& t : ggufTensorPlan(config)) out[t.ggufName] = chooser(t);
    return out;
}

std::string blk(int layer, const std::string& tensor) {
    return "blk." + std::to_string(layer) + "." + tensor + ".weight";
}

model::ModelConfig demoConfig() { return model::ModelConfig::fromCheckpoint(io::Checkpoint::open(kDemo)); }

TokenSequences demoWindows(const char* file, int samples, int seqLen) {
    return tokenWindows(model::Tokenizer::fromFile(kDemo), loadTexts(kDemo / file), samples, seqLen, file);
}

}  // namespace

TEST(GgufMethods, NamesAreLlamaQuantizesWithItsAliases) {
    const MethodSpec q = parseMethod("Q4_K_M");
    EXPECT_TRUE(q.gguf());
    EXPECT_EQ(q.ggufFileType, 15);
    EXPECT_EQ(q.name, "q4_k_m");
    EXPECT_EQ(q.label(), "GGUF Q4_K_M");
    EXPECT_EQ(parseMethod("q4_k").ggufFileType, 15);  // llama-quantize: "alias for Q4_K_M"
    EXPECT_EQ(parseMethod("q5_k").ggufFileType, 17);
    EXPECT_EQ(parseMethod("q6_k").ggufFileType, 18);
    EXPECT_EQ(parseMethod("q8_0").ggufFileType, 7);
    EXPECT_EQ(parseMethod("bf16").ggufFileType, 32);
    EXPECT_FALSE(q.needsCalibration());
    const auto list = parseMethodList("gptq4,q4_k_m,nvfp4");
    ASSERT_EQ(list.size(), 3u);
    EXPECT_TRUE(list[1].gguf());
    EXPECT_THROW(parseMethod("q4_k_x"), Error);
    EXPECT_THROW(parseMethod("q7_0"), Error);
}

TEST(GgufMethods, Q4KMOnLlama8BShapesGivesHalfOfAttnVAndFfnDownQ6K) {
    const auto types = typesOf("q4_k_m", llama8B());
    // llama.cpp's use_more_bits(i, 32): i < 4, i >= 28, or (i - 4) % 3 == 2.
    int q6 = 0;
    for (int i = 0; i < 32; ++i) {
        const bool more = i < 4 || i >= 28 || (i - 4) % 3 == 2;
        EXPECT_EQ(types.at(blk(i, "attn_v")), more ? T::Q6_K : T::Q4_K) << i;
        EXPECT_EQ(types.at(blk(i, "ffn_down")), more ? T::Q6_K : T::Q4_K) << i;
        for (const char* other : {"attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"})
            EXPECT_EQ(types.at(blk(i, other)), T::Q4_K);
        EXPECT_EQ(types.at("blk." + std::to_string(i) + ".attn_norm.weight"), T::F32);
        q6 += more;
    }
    EXPECT_EQ(q6, 16);
    EXPECT_EQ(types.at("output.weight"), T::Q6_K);
    EXPECT_EQ(types.at("token_embd.weight"), T::Q4_K);  // untied: the base type
    EXPECT_EQ(types.at("output_norm.weight"), T::F32);
}

TEST(GgufMethods, OtherMixesAndTheFallbacksOfRowsThatAreNotWholeBlocks) {
    const auto q3 = typesOf("q3_k_m", llama8B());
    EXPECT_EQ(q3.at(blk(0, "attn_v")), T::Q5_K);
    EXPECT_EQ(q3.at(blk(2, "attn_v")), T::Q4_K);
    EXPECT_EQ(q3.at(blk(1, "ffn_down")), T::Q5_K);  // i < 32/16
    EXPECT_EQ(q3.at(blk(2, "ffn_down")), T::Q4_K);
    EXPECT_EQ(q3.at(blk(5, "attn_output")), T::Q4_K);
    EXPECT_EQ(q3.at(blk(5, "attn_q")), T::Q3_K);
    const auto q2 = typesOf("q2_k", llama8B());
    EXPECT_EQ(q2.at(blk(0, "attn_v")), T::Q4_K);  // n_gqa = 4
    EXPECT_EQ(q2.at(blk(0, "ffn_down")), T::Q3_K);
    EXPECT_EQ(q2.at(blk(0, "ffn_up")), T::Q2_K);
    // Q4_0 with an imatrix keeps the first eighth of ffn_down in Q4_1, as llama.cpp does.
    EXPECT_EQ(typesOf("q4_0", llama8B(), true).at(blk(3, "ffn_down")), T::Q4_1);
    EXPECT_EQ(typesOf("q4_0", llama8B(), false).at(blk(3, "ffn_down")), T::Q4_0);
    // A 172-wide down_proj (stories260K) is not whole blocks of 256 nor of 32: F16; 64-wide rows: Q5_0.
    model::ModelConfig small = llama8B();
    small.hiddenSize = 64, small.intermediateSize = 172, small.numLayers = 5, small.numHeads = 8, small.numKvHeads = 4;
    small.headDim = 8, small.vocabSize = 512, small.tieWordEmbeddings = true;
    const auto s = typesOf("q4_k_m", small);
    EXPECT_EQ(s.at(blk(0, "ffn_down")), T::F16);
    EXPECT_EQ(s.at(blk(1, "attn_q")), T::Q5_0);
    EXPECT_EQ(s.at("token_embd.weight"), T::Q8_0);  // tied: the output's rule, 64 % 256 != 0
    EXPECT_EQ(s.count("output.weight"), 0u);
    EXPECT_EQ(typesOf("q8_0", small).at(blk(0, "ffn_down")), T::F16);
}

TEST(GgufMethods, AGgmlLinearHoldsTheBlocksAndDecodesThem) {
    MatrixF w(3, 256);
    for (Eigen::Index r = 0; r < w.rows(); ++r)
        for (Eigen::Index c = 0; c < w.cols(); ++c)
            w(r, c) = std::sin(0.37f * float(r * 256 + c)) * (1.0f + float(c % 7));
    const quant::QuantizedLinear q = quant::quantizeGgml(w, T::Q4_K);
    EXPECT_EQ(q.codeKind, quant::CodeKind::GgmlBlocks);
    EXPECT_EQ(q.blocks.size(), 3u * 144u);  // one 144-byte Q4_K block per row
    EXPECT_DOUBLE_EQ(q.bitsPerWeight(), 4.5);
    std::vector<std::uint8_t> direct(q.blocks.size());
    quant::ggmlEncodeRows(T::Q4_K, w.data(), direct.data(), 3, 256);
    EXPECT_EQ(q.blocks, direct);
    std::vector<float> row(256);
    io::ggmlDecodeRow(T::Q4_K, q.blocks.data() + 144, row.data(), 256);
    const MatrixF d = q.dequantize();
    EXPECT_EQ(std::memcmp(d.row(1).data(), row.data(), 256 * sizeof(float)), 0);
    EXPECT_GT((d - w).norm(), 0.0f);
    EXPECT_LT((d - w).norm() / w.norm(), 0.1f);
    // Importance (Σx² over 4 inputs) weighs the error: the bytes change, the sums are kept.
    quant::InputImportance importance{std::vector<float>(256, 1.0f), 4};
    for (int c = 0; c < 16; ++c) importance.sumSquares[std::size_t(c)] = 400.0f;
    const quant::QuantizedLinear weighted = quant::quantizeGgml(w, T::Q4_K, importance);
    EXPECT_NE(weighted.blocks, q.blocks);
    EXPECT_EQ(weighted.inputSumSquares, importance.sumSquares);
    EXPECT_THAT([&] { quant::quantizeGgml(MatrixF::Zero(2, 100), T::Q4_K); },
                testing::ThrowsMessage<Error>(HasSubstr("whole blocks")));
}

TEST(GgufMethods, DemoJobResultWrittenAsGgufIsTheMeasuredBytesAndEvaluatesToTheSameKl) {
    TempDir dir;
    JobPlan plan;
    plan.checkpoint = kDemo;
    plan.methods = parseMethodList("q4_k_m,q8_0");
    plan.calibration = demoWindows("calibration.txt", 4, 128);
    plan.evaluation = demoWindows("eval.txt", 4, 128);
    const JobResult result = Job(plan).run({}, CancelToken{});
    ASSERT_EQ(result.methods.size(), 2u);
    const MethodResult& q4 = result.methods[0];
    ASSERT_TRUE(q4.error.empty()) << q4.error;
    ASSERT_EQ(q4.layers.size(), 2u);
    // Two layers: use_more_bits(i, 2) holds for layer 1 only (i >= 7*2/8), so its attn_v and ffn_down
    // are Q6_K; everything else Q4_K.
    for (std::size_t layer = 0; layer < 2; ++layer)
        for (const auto& [module, linear] : q4.layers[layer]) {
            const bool more = layer == 1 && (module == "self_attn.v_proj" || module == "mlp.down_proj");
            EXPECT_EQ(linear->ggmlType, more ? T::Q6_K : T::Q4_K) << layer << " " << module;
            EXPECT_EQ(linear->inputCount, 4 * 128) << module;
        }
    // Bits over the linears, weighted by size: per layer q, o 256x256, k, v 128x256, gate, up, down 256x768.
    const double all = 2.0 * (2 * 65536 + 2 * 32768 + 3 * 196608), q6 = 32768.0 + 196608.0;
    EXPECT_NEAR(q4.bitsPerWeight, (4.5 * (all - q6) + 6.5625 * q6) / all, 1e-9);
    EXPECT_GT(q4.kl.meanKld.value, result.methods[1].kl.meanKld.value);  // Q8_0 is closer
    EXPECT_GT(result.methods[1].kl.meanKld.value, 0.0);

    for (const MethodResult& r : result.methods) {
        const fs::path file = writeGgufResult(io::Checkpoint::open(kDemo), r, dir.path() / (r.method.name + ".gguf"),
                                              {}, {}, CancelToken{});
        const io::GgufFile gguf = io::GgufFile::open(file);
        EXPECT_EQ(gguf.metadata().integer("general.file_type"), r.method.ggufFileType);
        const auto* down = gguf.find("blk.1.ffn_down.weight");
        ASSERT_NE(down, nullptr);
        const auto& blocks = r.layers[1].at("mlp.down_proj")->blocks;
        const auto bytes = gguf.view(*down).bytes();
        ASSERT_EQ(bytes.size(), blocks.size());
        EXPECT_EQ(std::memcmp(bytes.data(), blocks.data(), blocks.size()), 0) << r.method.name;
        EXPECT_EQ(*gguf.find("token_embd.weight")->ggmlType, r.method.name == "q8_0" ? T::Q8_0 : T::Q6_K);
        // The file evaluated as any downloaded GGUF gives the KL the Job measured.
        const CheckpointEvalResult e = evaluateCheckpoints({kDemo, file, plan.evaluation}, {}, CancelToken{});
        EXPECT_EQ(e.kl.meanKld.value, r.kl.meanKld.value) << r.method.name;
    }

    // The imatrix: per linear, Σx² and the token count the blocks were encoded with.
    const fs::path imatrix =
        writeImatrix(q4, demoConfig(), dir.path() / "demo.imatrix.gguf", {{"calibration.txt"}, 4, 128});
    const io::GgufFile im = io::GgufFile::open(imatrix);
    ASSERT_NE(im.metadata().string("general.type"), nullptr);
    EXPECT_EQ(*im.metadata().string("general.type"), "imatrix");
    EXPECT_EQ(im.metadata().integer("imatrix.chunk_count"), 4);
    EXPECT_EQ(im.tensors().size(), 2u * 7u * 2u);
    const auto* sums = im.find("blk.0.attn_q.weight.in_sum2");
    ASSERT_NE(sums, nullptr);
    const std::vector<float> values = im.view(*sums).toF32();
    EXPECT_EQ(values, q4.layers[0].at("self_attn.q_proj")->inputSumSquares);
    EXPECT_EQ(im.view(*im.find("blk.0.attn_q.weight.counts")).toF32(), std::vector<float>{512.0f});
    EXPECT_THAT([&] { writeImatrix(q4, demoConfig(), imatrix, {}); },
                testing::ThrowsMessage<Error>(HasSubstr("exists")));
}
