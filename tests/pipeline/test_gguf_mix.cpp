// ggml types as a mix's candidates (one type per linear) and the mix as one GGUF: the names, ggml's
// own bits per weight, the imatrix weighting the GGUF methods use (bit for bit against a q4_k_m Job),
// the proof on the demo (at q4_K's bits the group-kl allocation measures no worse than uniform q4_K),
// and the file: every linear in its allocated type, decoding to the Job's values bit for bit; rules
// (q8_0 override, dense ignore) reach it; a method a GGUF cannot hold is refused naming the module.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/gguf_file.h"
#include "qs/io/gguf_names.h"
#include "qs/model/checkpoint_weights.h"
#include "qs/model/tokenizer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/gguf_result_export.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/layer_quantizer.h"
#include "qs/pipeline/mixed_precision_allocation.h"
#include "qs/pipeline/mixed_precision_measure.h"
#include "qs/pipeline/mixed_precision_report.h"
#include "qs/pipeline/mixed_precision_rules.h"

#include "io_test_util.h"

using namespace qs;
using namespace qs::pipeline;
using qs::io::test::TempDir;
using testing::HasSubstr;
using T = io::GgmlType;

namespace {

namespace fs = std::filesystem;

const fs::path kDemo = fs::path(QS_RESOURCES_DIR) / "demo";

JobPlan demoPlan(int samples) {
    const auto tokenizer = model::Tokenizer::fromFile(kDemo);
    JobPlan plan;
    plan.checkpoint = kDemo;
    plan.calibration = tokenWindows(tokenizer, loadTexts(kDemo / "calibration.txt"), samples, 128, "calibration.txt");
    plan.evaluation = tokenWindows(tokenizer, loadTexts(kDemo / "eval.txt"), samples, 128, "eval.txt");
    return plan;
}

MatrixF randomWeight(Eigen::Index rows, Eigen::Index cols, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    MatrixF w(rows, cols);
    for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = normal(rng);
    return w;
}

model::LayerWeights demoLayer(int layer) {
    const io::Checkpoint demo = io::Checkpoint::open(kDemo);
    return model::CheckpointWeights(demo, model::ModelConfig::fromCheckpoint(demo)).layer(layer);
}

std::string refusal(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// What the GGUF holds for `module` of `layer`: its type and its values decoded by our reader.
struct Stored {
    T type;
    std::vector<float> values;
};

Stored stored(const io::GgufFile& file, int layer, const std::string& module) {
    const std::string name = *io::ggufNameOfHfTensor(moduleName(layer, module) + ".weight");
    return {*file.find(name)->ggmlType, file.tensor(name).toF32()};
}

// The Job's own decoding of a linear, row-major [out, in] as the GGUF stores it (qwen3: no row order change).
std::vector<float> decoded(const quant::QuantizedLinear& q) {
    const MatrixF w = q.dequantize();
    return std::vector<float>(w.data(), w.data() + w.size());
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST(GgufMix, GgmlTypeNamesAreSingleTypesInAMixAndFileTypesAsAMethod) {
    const MethodSpec q4 = parseMixMethod("Q4_K");
    ASSERT_TRUE(q4.ggmlType.has_value());
    EXPECT_EQ(*q4.ggmlType, T::Q4_K);
    EXPECT_EQ(q4.name, "q4_K");  // ggml's spelling, whatever the case typed
    EXPECT_TRUE(q4.gguf());
    EXPECT_FALSE(q4.ggufFileMix());
    EXPECT_FALSE(q4.needsCalibration());
    EXPECT_EQ(*parseMixMethod("q8_0").ggmlType, T::Q8_0);
    EXPECT_EQ(*parseMixMethod("iq4_xs").ggmlType, T::IQ4_XS);
    // As --method, q4_K stays llama-quantize's alias of Q4_K_M; a file type in a mix is still one.
    EXPECT_EQ(parseMethod("q4_K").ggufFileType, 15);
    EXPECT_TRUE(parseMixMethod("q4_k_m").ggufFileMix());
    // QuantScope's own methods keep their names (ggml spells mxfp4 / nvfp4 the same); floats are no candidates.
    EXPECT_EQ(parseMixMethod("nvfp4").kind, MethodKind::Nvfp4);
    EXPECT_EQ(parseMixMethod("mxfp4").kind, MethodKind::Mxfp4);
    EXPECT_EQ(parseMixMethod("gptq4").kind, MethodKind::Gptq);
    EXPECT_TRUE(parseMixMethod("f16").ggufFileMix());  // the F16 file type, which a mix refuses like q4_k_m
    const auto list = parseMixMethodList("q3_K,q4_K,gptq8");
    ASSERT_EQ(list.size(), 3u);
    EXPECT_EQ(*list[0].ggmlType, T::Q3_K);
    EXPECT_FALSE(list[2].ggmlType.has_value());
    EXPECT_EQ(parseOverride("layers\\.0\\..*=q8_0").method.ggmlType, T::Q8_0);
}

TEST(GgufMix, BitsPerWeightAreGgmlsOwnWithLlamaQuantizesFallback) {
    const MatrixF w = randomWeight(4, 512, 1);
    const std::vector<std::pair<std::string, double>> expected = {
        {"q3_K", 110.0 * 8 / 256}, {"q4_K", 4.5}, {"q5_K", 5.5}, {"q6_K", 6.5625}, {"q8_0", 8.5},
        {"iq4_xs", 4.25},          {"q4_0", 4.5}};
    for (const auto& [name, bits] : expected) {
        const quant::QuantizedLinear q = quantizeLinear(parseMixMethod(name), w, nullptr, 0.0, 0);
        EXPECT_EQ(q.codeKind, quant::CodeKind::GgmlBlocks) << name;
        EXPECT_EQ(q.ggmlType, *parseMixMethod(name).ggmlType) << name;
        EXPECT_DOUBLE_EQ(q.bitsPerWeight(), bits) << name;
    }
    // Rows of 384 are not whole 256-blocks: Q4_K falls back to Q5_0 and Q6_K to Q8_0, as llama-quantize does.
    const MatrixF narrow = randomWeight(4, 384, 2);
    EXPECT_EQ(quantizeLinear(parseMixMethod("q4_K"), narrow, nullptr, 0.0, 0).ggmlType, T::Q5_0);
    EXPECT_EQ(quantizeLinear(parseMixMethod("q6_K"), narrow, nullptr, 0.0, 0).ggmlType, T::Q8_0);
}

// A q4_K linear in a mix is weighted by the calibration exactly as the q4_k_m method weighs its Q4_K
// linears: the same blocks, bit for bit (and not the unweighted ones).
TEST(GgufMix, ASingleTypeIsImportanceWeightedAsTheGgufMethodsAre) {
    JobPlan plan = demoPlan(4);
    plan.evaluation.clear();
    plan.methods = {parseMethod("q4_k_m"), parseMixMethod("q4_K")};
    const JobResult r = Job(plan).run({}, CancelToken{});
    ASSERT_TRUE(r.methods[0].error.empty()) << r.methods[0].error;
    ASSERT_TRUE(r.methods[1].error.empty()) << r.methods[1].error;
    int compared = 0;
    for (std::size_t l = 0; l < r.methods[0].layers.size(); ++l)
        for (const auto& [module, theirs] : r.methods[0].layers[l]) {
            const auto& mine = *r.methods[1].layers[l].at(module);
            EXPECT_EQ(mine.ggmlType, T::Q4_K) << module;
            EXPECT_GT(mine.inputCount, 0) << module;    // the importance went in
            if (theirs->ggmlType != T::Q4_K) continue;  // q4_k_m's attn_v / ffn_down in Q6_K
            EXPECT_EQ(mine.blocks, theirs->blocks) << l << " " << module;
            ++compared;
        }
    EXPECT_GE(compared, 10);
    const quant::QuantizedLinear& first = *r.methods[1].layers[0].at("self_attn.q_proj");
    const quant::QuantizedLinear plain =
        quantizeLinear(parseMixMethod("q4_K"), demoLayer(0).linear("self_attn.q_proj").weight, nullptr, 0.0, 0);
    EXPECT_NE(first.blocks, plain.blocks);
}

// The proof on the demo: candidates q3_K..q6_K measured (group-kl), the allocation at uniform q4_K's
// own bits quantized, its measured KL no higher than uniform q4_K's; the GGUF holds each linear in the
// allocated type and decodes to the Job's values bit for bit; the dense tensors F16 / F32.
TEST(GgufMix, AtQ4KsBitsTheAllocationMeasuresNoWorseAndItsGgufHoldsTheAllocatedTypes) {
    JobPlan plan = demoPlan(8);
    const auto candidates = parseMixMethodList("q3_K,q4_K,q5_K,q6_K");
    const SensitivityTable table = measureSensitivity(plan, candidates, Sensitivity::GroupKl, {}, CancelToken{});
    EXPECT_DOUBLE_EQ(table.uniformBpw[1], 4.5);
    EXPECT_DOUBLE_EQ(table.uniformBpw[3], 6.5625);
    const MixedPrecisionPlanner planner(table, {}, namesOf(candidates));
    const MixedAllocation allocation = planner.at(table.uniformBpw[1]);
    plan.mixed = {planner.methods(allocation, "mixed 4.50 bpw")};
    const MethodResult mixed = Job(plan).run({}, CancelToken{}).methods.front();
    ASSERT_TRUE(mixed.error.empty()) << mixed.error;
    const double kl = mixed.kl.meanKld.value;
    std::cout << "demo at q4_K's 4.5 bpw (group-kl): " << allocationSummary(table, allocation) << " at "
              << mixed.bitsPerWeight << " bpw; predicted " << allocation.predictedKl << ", measured " << kl
              << "; uniform q3_K " << table.uniformKl[0] << ", q4_K " << table.uniformKl[1] << ", q5_K "
              << table.uniformKl[2] << ", q6_K " << table.uniformKl[3] << "\n";
    EXPECT_LE(mixed.bitsPerWeight, 4.5 + 1e-9);
    EXPECT_LE(kl, table.uniformKl[1]);
    EXPECT_LE(kl, std::min(table.uniformKl[0], table.uniformKl[1]));

    const TempDir dir;
    const fs::path file =
        writeGgufMixResult(io::Checkpoint::open(kDemo), mixed, dir.path() / "mix.gguf", {}, {}, CancelToken{});
    const io::GgufFile gguf = io::GgufFile::open(file);
    int linears = 0;
    for (std::size_t g = 0; g < table.groups.size(); ++g)
        for (const auto& module : table.groups[g].modules) {
            const int layer = table.groups[g].layer;
            const Stored s = stored(gguf, layer, module);
            EXPECT_EQ(s.type, *table.candidates[std::size_t(allocation.choice[g])].ggmlType)
                << moduleName(layer, module);
            EXPECT_TRUE(sameBits(s.values, decoded(*mixed.layers[std::size_t(layer)].at(module))))
                << moduleName(layer, module);
            ++linears;
        }
    EXPECT_EQ(linears, 14);
    EXPECT_EQ(*gguf.find("token_embd.weight")->ggmlType, T::F16);  // tied: token_embd serves as output
    EXPECT_EQ(*gguf.find("blk.0.attn_norm.weight")->ggmlType, T::F32);
    EXPECT_EQ(*gguf.find("blk.1.attn_k_norm.weight")->ggmlType, T::F32);
    EXPECT_EQ(*gguf.metadata().find("quantize.imatrix.entries_count")->asUnsigned(), 14u);
}

// --override 'layers\.0\..*=q8_0' and --ignore reach the file; a GGUF cannot hold rtn4, and a file
// type's whole-model mix cannot be one linear's method.
TEST(GgufMix, RulesReachTheFileAndMethodsAGgufCannotHoldAreRefusedNamingTheModule) {
    JobPlan plan = demoPlan(4);
    plan.evaluation.clear();
    ModuleRules rules;
    rules.overrides.push_back(parseOverride("layers\\.0\\..*=q8_0"));
    rules.ignore.push_back("layers\\.1\\.mlp\\.down_proj");
    plan.mixed = {applyRules(parseMixMethod("q4_K"), rules, 2, "q4_K with rules")};
    const MethodResult mixed = Job(plan).run({}, CancelToken{}).methods.front();
    ASSERT_TRUE(mixed.error.empty()) << mixed.error;
    const TempDir dir;
    const io::Checkpoint demo = io::Checkpoint::open(kDemo);
    const io::GgufFile gguf =
        io::GgufFile::open(writeGgufMixResult(demo, mixed, dir.path() / "rules.gguf", {}, {}, CancelToken{}));
    for (const auto module : model::LayerWeights::kLinearModules) {
        EXPECT_EQ(stored(gguf, 0, std::string(module)).type, T::Q8_0) << module;
        EXPECT_EQ(stored(gguf, 1, std::string(module)).type, module == "mlp.down_proj" ? T::F16 : T::Q4_K) << module;
    }
    // The ignored linear holds the checkpoint's weight rounded to half precision (Eigen's rounding).
    const MatrixF original = demoLayer(1).linear("mlp.down_proj").weight;
    std::vector<float> half(std::size_t(original.size()));
    for (Eigen::Index i = 0; i < original.size(); ++i)
        half[std::size_t(i)] = static_cast<float>(Eigen::half(original.data()[i]));
    EXPECT_TRUE(sameBits(stored(gguf, 1, "mlp.down_proj").values, half));

    ModuleRules withRtn;
    withRtn.overrides.push_back(parseOverride("layers\\.1\\.mlp\\.down_proj=rtn4"));
    plan.mixed = {applyRules(parseMixMethod("q4_K"), withRtn, 2, "q4_K with rtn4")};
    const MethodResult rtn = Job(plan).run({}, CancelToken{}).methods.front();
    ASSERT_TRUE(rtn.error.empty()) << rtn.error;
    const fs::path refused = dir.path() / "refused.gguf";
    EXPECT_THAT(refusal([&] { (void)writeGgufMixResult(demo, rtn, refused, {}, {}, CancelToken{}); }),
                HasSubstr("model.layers.1.mlp.down_proj is rtn4, which a GGUF file cannot hold"));
    EXPECT_FALSE(fs::exists(refused));

    plan.mixed = {applyRules(parseMixMethod("q4_k_m"), {}, 2, "q4_k_m per linear")};
    EXPECT_THAT(refusal([&] { (void)Job(plan); }),
                HasSubstr("model.layers.0.mlp.down_proj: GGUF Q4_K_M (q4_k_m) chooses for a whole layer"));
}
