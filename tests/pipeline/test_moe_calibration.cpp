// MoE calibration through the Job: per-expert Hessians, the router left dense, the tokens each expert
// was routed reported, and all-expert calibration (the default) against routed-only on a model where
// one expert is almost never chosen. Plus the methods of `compare` end to end on the tiny checkpoints.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "qs/cancel_token.h"
#include "qs/error.h"
#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_writer.h"
#include "qs/io/json_file.h"
#include "qs/model/model_config.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/checkpoint_eval.h"
#include "qs/pipeline/decoded_weights.h"
#include "qs/pipeline/dense_export.h"
#include "qs/pipeline/export_check.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/gpt_oss_mxfp4_export.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/job_report.h"
#include "qs/pipeline/mixed_precision_measure.h"
#include "qs/pipeline/mixed_precision_rules.h"
#include "qs/pipeline/resource_estimate.h"

using namespace qs;
using namespace qs::pipeline;
namespace fs = std::filesystem;

namespace {

constexpr int kHidden = 32, kExperts = 6, kWidth = 16, kVocab = 64, kRare = 63, kStarvedExpert = 5;

void add(io::CheckpointWriter& w, const std::string& name, const MatrixF& m) {
    std::vector<std::int64_t> shape{m.rows(), m.cols()};
    if (m.cols() == 1) shape = {m.rows()};
    w.addTensorF32(name, io::DType::F32, shape, std::span<const float>(m.data(), std::size_t(m.size())));
}

MatrixF gaussian(std::mt19937& rng, int rows, int cols, float scale) {
    std::normal_distribution<float> n(0.0f, scale);
    MatrixF m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(rng);
    return m;
}

// One Mixtral layer whose attention writes nothing (o_proj = 0), so the experts read the normalised
// embedding. Every token's embedding leans along u except token kRare's, which leans against it; the
// router scores expert 5 by -4 x·u, so it wins (within the top 2) only for kRare.
fs::path writeSkewedMixtral(const fs::path& dir) {
    std::mt19937 rng(77);
    VectorF u = gaussian(rng, kHidden, 1, 1.0f);
    u.normalize();
    MatrixF embedding = gaussian(rng, kVocab, kHidden, 1.0f);
    for (int t = 0; t < kVocab; ++t) embedding.row(t) += (t == kRare ? -3.0f : 3.0f) * u.transpose();
    MatrixF router = gaussian(rng, kExperts, kHidden, 1.0f);
    router.row(kStarvedExpert) = -4.0f * u.transpose();
    const VectorF ones = VectorF::Ones(kHidden);
    io::CheckpointWriter w(dir);
    add(w, "model.embed_tokens.weight", embedding);
    add(w, "model.norm.weight", ones);
    add(w, "lm_head.weight", gaussian(rng, kVocab, kHidden, 0.3f));
    const std::string p = "model.layers.0.";
    add(w, p + "input_layernorm.weight", ones);
    add(w, p + "post_attention_layernorm.weight", ones);
    add(w, p + "self_attn.q_proj.weight", gaussian(rng, 32, kHidden, 0.2f));
    add(w, p + "self_attn.k_proj.weight", gaussian(rng, 16, kHidden, 0.2f));
    add(w, p + "self_attn.v_proj.weight", gaussian(rng, 16, kHidden, 0.2f));
    add(w, p + "self_attn.o_proj.weight", MatrixF::Zero(kHidden, 32));
    add(w, p + "block_sparse_moe.gate.weight", router);
    for (int e = 0; e < kExperts; ++e) {
        const std::string x = p + "block_sparse_moe.experts." + std::to_string(e) + ".";
        add(w, x + "w1.weight", gaussian(rng, kWidth, kHidden, 0.3f));
        add(w, x + "w3.weight", gaussian(rng, kWidth, kHidden, 0.3f));
        add(w, x + "w2.weight", gaussian(rng, kHidden, kWidth, 0.3f));
    }
    w.setConfig({{"architectures", {"MixtralForCausalLM"}},
                 {"model_type", "mixtral"},
                 {"hidden_size", kHidden},
                 {"intermediate_size", kWidth},
                 {"num_hidden_layers", 1},
                 {"num_attention_heads", 4},
                 {"num_key_value_heads", 2},
                 {"vocab_size", kVocab},
                 {"max_position_embeddings", 256},
                 {"rms_norm_eps", 1e-6},
                 {"rope_theta", 10000.0},
                 {"num_local_experts", kExperts},
                 {"num_experts_per_tok", 2},
                 {"tie_word_embeddings", false}});
    w.finish();
    return dir;
}

// 6 sequences of 64 tokens, none kRare except two positions: expert 5 is routed about two tokens.
TokenSequences skewedText() {
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> token(0, kRare - 1);
    TokenSequences text(6, std::vector<model::TokenId>(64));
    for (auto& s : text)
        for (auto& t : s) t = token(rng);
    text[1][10] = kRare;
    text[4][50] = kRare;
    return text;
}

struct ExpertLogs {
    std::map<int, std::map<std::string, ModuleLog>> byExpert;  // expert -> "w1"/"w2"/"w3" -> log
    std::vector<std::string> modules;
};

ExpertLogs expertLogs(const MethodResult& r) {
    ExpertLogs out;
    const std::string prefix = "block_sparse_moe.experts.";
    for (const auto& m : r.modules) {
        out.modules.push_back(m.module);
        if (!m.module.starts_with(prefix)) continue;
        const auto dot = m.module.find('.', prefix.size());
        out.byExpert[std::stoi(m.module.substr(prefix.size(), dot - prefix.size()))][m.module.substr(dot + 1)] = m;
    }
    return out;
}

class MoeCalibration : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = fs::temp_directory_path() / ("qs_test_moe_calibration_" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        writeSkewedMixtral(dir_);
    }
    static void TearDownTestSuite() { fs::remove_all(dir_); }

    static MethodResult run(bool allExperts, const std::string& method = "gptq4") {
        JobPlan plan;
        plan.checkpoint = dir_;
        plan.methods = parseMethodList(method, 16);
        plan.calibration = skewedText();
        plan.moeCalibrateAllExperts = allExperts;
        JobResult r = Job(std::move(plan)).run({}, CancelToken{});
        EXPECT_EQ(r.methods.size(), 1u);
        return r.methods.at(0);
    }
    static fs::path dir_;
};
fs::path MoeCalibration::dir_;

TEST_F(MoeCalibration, EveryExpertIsQuantizedAndTheRouterIsNot) {
    const MethodResult r = run(true);
    ASSERT_TRUE(r.error.empty()) << r.error;
    const ExpertLogs logs = expertLogs(r);
    EXPECT_EQ(logs.byExpert.size(), std::size_t(kExperts));
    EXPECT_EQ(std::count(logs.modules.begin(), logs.modules.end(), "block_sparse_moe.gate"), 0);
    ASSERT_EQ(r.layers.size(), 1u);
    EXPECT_EQ(r.layers[0].size(), std::size_t(4 + 3 * kExperts));  // q, k, v, o and every expert's three
    EXPECT_FALSE(r.layers[0].contains("block_sparse_moe.gate"));
    EXPECT_TRUE(r.layers[0].contains("block_sparse_moe.experts.5.w2"));
}

TEST_F(MoeCalibration, AllExpertCalibrationGivesTheRareExpertTheOthersErrorAndRoutedOnlyReportsItStarved) {
    const MethodResult all = run(true), routed = run(false);
    ASSERT_TRUE(all.error.empty()) << all.error;
    ASSERT_TRUE(routed.error.empty()) << routed.error;
    const ExpertLogs a = expertLogs(all), r = expertLogs(routed);

    // The router decides the routed counts, whatever the calibration: 384 tokens, 2 experts each.
    std::int64_t routedSum = 0;
    for (int e = 0; e < kExperts; ++e) {
        EXPECT_EQ(a.byExpert.at(e).at("w1").routedTokens, r.byExpert.at(e).at("w1").routedTokens) << e;
        routedSum += a.byExpert.at(e).at("w1").routedTokens;
    }
    EXPECT_EQ(routedSum, 6 * 64 * 2);
    const std::int64_t rare = a.byExpert.at(kStarvedExpert).at("w1").routedTokens;
    EXPECT_GE(rare, 1);
    EXPECT_LE(rare, 2);

    for (const char* module : {"w1", "w3", "w2"}) {
        SCOPED_TRACE(module);
        // All experts: every expert's H from all 384 tokens; the rare one's error is like the others'.
        double others = 0.0;
        for (int e = 0; e < kExperts; ++e) {
            const ModuleLog& log = a.byExpert.at(e).at(module);
            EXPECT_EQ(log.samples, 384);
            EXPECT_FALSE(log.starved());
            if (e != kStarvedExpert) others += log.outputError / (kExperts - 1);
        }
        const double rareError = a.byExpert.at(kStarvedExpert).at(module).outputError;
        std::printf("%s: all-expert calibration, output error of the rare expert %.4g, mean of the others %.4g\n",
                    module, rareError, others);
        EXPECT_GT(rareError, 0.0);
        EXPECT_LT(rareError, 1.5 * others);
        // Routed only: the rare expert's H comes from its one or two tokens, fewer than its inputs.
        const ModuleLog& starved = r.byExpert.at(kStarvedExpert).at(module);
        EXPECT_EQ(starved.samples, rare);
        EXPECT_TRUE(starved.starved());
        EXPECT_TRUE(toJson(starved).at("starved").get<bool>());
        EXPECT_EQ(toJson(starved).at("routed_tokens").get<std::int64_t>(), rare);
        for (int e = 0; e < kExperts; ++e)
            if (e != kStarvedExpert) {
                EXPECT_FALSE(r.byExpert.at(e).at(module).starved()) << e;
            }
    }
    for (const auto& log : all.modules) {
        if (log.module == "self_attn.q_proj") {
            EXPECT_TRUE(toJson(log).at("routed_tokens").is_null());  // no expert
        }
    }
}

// AWQ on a MoE layer: every expert's gate and up share one input scale (the norm before the block
// absorbs 1/s, the router s), and each expert's down_proj has its own (its up_proj's rows absorb it).
// Routed-only calibration too: the shared scale weighs each expert's statistics by its tokens.
TEST_F(MoeCalibration, AwqSharesOneScaleAcrossTheExpertsGateAndUp) {
    for (const bool allExperts : {true, false}) {
        SCOPED_TRACE(allExperts ? "all experts" : "routed only");
        const MethodResult r = run(allExperts, "awq4");
        ASSERT_TRUE(r.error.empty()) << r.error;
        const QuantizedLayer& layer = r.layers.at(0);
        EXPECT_EQ(layer.size(), std::size_t(4 + 3 * kExperts));
        const std::vector<float> shared = layer.at("block_sparse_moe.experts.0.w1")->inputScales;
        ASSERT_EQ(shared.size(), std::size_t(kHidden));
        EXPECT_TRUE(std::any_of(shared.begin(), shared.end(), [](float s) { return s != 1.0f; }))
            << "the search chose α = 0";
        for (int e = 0; e < kExperts; ++e) {
            const std::string x = "block_sparse_moe.experts." + std::to_string(e) + ".";
            EXPECT_EQ(layer.at(x + "w1")->inputScales, shared) << e;
            EXPECT_EQ(layer.at(x + "w3")->inputScales, shared) << e;
            EXPECT_EQ(layer.at(x + "w2")->inputScales.size(), std::size_t(kWidth)) << e;
        }
        EXPECT_FALSE(layer.contains("block_sparse_moe.gate"));
    }
}

// `compare`'s methods end to end on both tiny checkpoints (KL against the original on held-out text).
TEST(TinyMoe, CompareMethodsRunEndToEnd) {
    for (const char* name : {"qwen3-moe-tiny", "mixtral-tiny"}) {
        SCOPED_TRACE(name);
        JobPlan plan;
        plan.checkpoint = fs::path(QS_TEST_DATA_DIR) / "moe" / name;
        plan.methods = parseMethodList("rtn4,gptq4,awq4,fp8,nvfp4", 16);
        std::mt19937 rng(9);
        std::uniform_int_distribution<int> token(0, 255);
        for (auto* text : {&plan.calibration, &plan.evaluation}) {
            text->assign(4, std::vector<model::TokenId>(48));
            for (auto& s : *text)
                for (auto& t : s) t = token(rng);
        }
        const io::Checkpoint checkpoint = io::Checkpoint::open(plan.checkpoint);
        const JobResult r = Job(std::move(plan)).run({}, CancelToken{});
        ASSERT_EQ(r.methods.size(), 5u);
        // What the size counts besides the quantized linears is every other tensor as stored, routers included.
        std::uint64_t total = 0;
        for (const auto& t : checkpoint.tensors()) total += t.info->byteSize();
        for (const auto& m : r.methods) {
            std::uint64_t kept = total;
            for (std::size_t layer = 0; layer < m.layers.size(); ++layer)
                for (const auto& [module, q] : m.layers[layer])
                    kept -= checkpoint.find("model.layers." + std::to_string(layer) + "." + module + ".weight")
                                ->info->byteSize();
            EXPECT_EQ(m.checkpointBytes - m.linearBytes, kept) << m.method.name;
            EXPECT_TRUE(m.error.empty()) << m.method.name << ": " << m.error;
            EXPECT_EQ(m.layers.size(), 2u);
            EXPECT_EQ(m.layers.at(1).size(), std::size_t(4 + 3 * 4)) << m.method.name;
            const double kl = m.kl.meanKld.value;
            std::printf("%s %s: mean KL %.4g\n", name, m.method.name.c_str(), kl);
            EXPECT_GT(kl, 0.0) << m.method.name;
            EXPECT_LT(kl, 1.0) << m.method.name;
        }
    }
}

// gpt-oss (tests/data/gptoss): the Job quantizes each expert's gate_up_proj and down_proj as linears of
// their own and measures the KL, but gpt-oss's loaders read the experts stacked (its MXFP4, or dense),
// not as per-expert quantized linears: the export is refused in one line before anything is written.
TEST(TinyGptOss, TheJobMeasuresItAndTheExportIsRefusedInOneLine) {
    const fs::path source = fs::path(QS_TEST_DATA_DIR) / "gptoss" / "gptoss-tiny";
    JobPlan plan;
    plan.checkpoint = source;
    plan.methods = parseMethodList("rtn4", 16);
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> token(0, 255);
    for (auto* text : {&plan.calibration, &plan.evaluation}) {
        text->assign(2, std::vector<model::TokenId>(48));
        for (auto& s : *text)
            for (auto& t : s) t = token(rng);
    }
    const JobResult r = Job(std::move(plan)).run({}, CancelToken{});
    const MethodResult& m = r.methods.at(0);
    ASSERT_TRUE(m.error.empty()) << m.error;
    EXPECT_EQ(m.layers.at(3).size(), std::size_t(4 + 2 * 4));
    EXPECT_EQ(m.layers.at(3).count("mlp.experts.2.gate_up_proj"), 1u);
    EXPECT_GT(m.kl.meanKld.value, 0.0);
    // The size counts the stacked experts once, as the result's linears; their biases and the routers are kept.
    const io::Checkpoint checkpoint = io::Checkpoint::open(source);
    std::uint64_t kept = 0;
    for (const auto& t : checkpoint.tensors())
        if (!t.info->name.ends_with(".mlp.experts.gate_up_proj") && !t.info->name.ends_with(".mlp.experts.down_proj") &&
            !t.info->name.ends_with("_proj.weight"))
            kept += t.info->byteSize();
    EXPECT_EQ(m.checkpointBytes - m.linearBytes, kept);
    const std::string why = exportRefusal(m, encoderForMethod(m.method, ""));
    EXPECT_NE(why.find("gpt-oss's experts are stacked tensors"), std::string::npos) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
    const fs::path dir = fs::temp_directory_path() / ("qs_test_gptoss_export_" + std::to_string(::getpid()));
    EXPECT_THROW(exportCheckpoint({source, dir, "", false, {}}, m, {}, CancelToken{}), Error);
    EXPECT_FALSE(fs::exists(dir));
}

// gpt-oss as it is released, with MXFP4 experts (here the tiny one brought to that layout): its experts
// are decoded where the model reads them, so `eval` measures it as its dequantized copy measures, and the
// Job quantizes it anew (the MXFP4 values are its original weights, not a quantized copy to refuse).
TEST(TinyGptOss, ItsMxfp4ReleaseRunsDecodedAndQuantizesAnew) {
    const fs::path source = fs::path(QS_TEST_DATA_DIR) / "gptoss" / "gptoss-tiny";
    const fs::path dir = fs::temp_directory_path() / ("qs_test_gptoss_mxfp4_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path mxfp4 = dir / "mxfp4", dense = dir / "dense";
    (void)exportGptOssMxfp4({source, mxfp4}, {}, CancelToken{});
    (void)exportDense({mxfp4, dense, io::DType::F32}, {}, CancelToken{});
    std::mt19937 rng(6);
    std::uniform_int_distribution<int> token(0, 255);
    TokenSequences windows(3, std::vector<model::TokenId>(48));
    for (auto& w : windows)
        for (auto& t : w) t = token(rng);
    const double direct = evaluateCheckpoints({source, mxfp4, windows}, {}, CancelToken{}).kl.meanKld.value;
    const double viaDense = evaluateCheckpoints({source, dense, windows}, {}, CancelToken{}).kl.meanKld.value;
    EXPECT_GT(direct, 1e-5);  // the MXFP4 round trip changed the model
    EXPECT_EQ(direct, viaDense);

    JobPlan plan;
    plan.checkpoint = mxfp4;
    plan.methods = parseMethodList("q8_0,gptq4", 16);
    plan.calibration = windows;
    plan.evaluation = windows;
    const JobResult r = Job(std::move(plan)).run({}, CancelToken{});
    for (const auto& m : r.methods) EXPECT_TRUE(m.error.empty()) << m.method.name << ": " << m.error;
    EXPECT_EQ(r.methods.at(0).layers.at(3).size(), std::size_t(4 + 2 * 4));
    for (const auto& m : r.methods) EXPECT_GT(m.kl.meanKld.value, 0.0) << m.method.name;
    // Q8_0 quantized the decoded MXFP4 values: within half a Q8_0 step of them (a step is at most the
    // largest |w| / 127), while the original BF16 weights are further away than that (MXFP4's error).
    const io::Checkpoint released = io::Checkpoint::open(mxfp4);
    const DecodedWeights decoded(released, model::ModelConfig::fromCheckpoint(released));
    model::Transformer bf16 = model::Transformer::fromCheckpoint(io::Checkpoint::open(source));
    const model::LayerWeights& original = bf16.layerWeights(1);
    const model::LayerWeights layer = decoded.layer(1);
    const MatrixF& w = layer.experts.at(2).gate.weight;
    const MatrixF q = r.methods.at(0).layers.at(1).at("mlp.experts.2.gate_up_proj")->dequantize();
    const float halfStep = 0.5f * w.cwiseAbs().maxCoeff() / 127.0f;
    EXPECT_LE((q - w).cwiseAbs().maxCoeff(), halfStep * 1.001f);
    EXPECT_GT((original.experts.at(2).gate.weight - w).cwiseAbs().maxCoeff(), 2.0f * halfStep);
    fs::remove_all(dir);
}

// The bit budget's measurement chooses per fused group of a dense layer's seven linears: on a MoE
// model it is refused before any work, in one line (it used to run, then fail on a missing gate_proj).
TEST(TinyMoe, TheBitBudgetsMeasurementIsRefusedBeforeAnyWork) {
    JobPlan plan;
    plan.checkpoint = fs::path(QS_TEST_DATA_DIR) / "moe" / "qwen3-moe-tiny";
    plan.evaluation.assign(2, std::vector<model::TokenId>(16, 1));
    bool progressed = false;
    try {
        (void)measureSensitivity(
            plan, parseMethodList("gptq4,gptq8", 16), Sensitivity::GroupKl, [&](const Progress&) { progressed = true; },
            CancelToken{});
        FAIL() << "expected qs::Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("mixture of experts"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(progressed);
}

// A mix (here an --override rule) on a MoE is refused before any work, saying why.
TEST(TinyMoe, AMixOfMethodsIsRefusedBeforeAnyWork) {
    JobPlan plan;
    plan.checkpoint = fs::path(QS_TEST_DATA_DIR) / "moe" / "qwen3-moe-tiny";
    plan.evaluation.assign(2, std::vector<model::TokenId>(16, 1));
    ModuleRules rules;
    rules.overrides.push_back(parseOverride("self_attn=rtn8", 16));
    plan.mixed.push_back(applyRules(parseMethod("rtn4", 16), rules, 2, "mixed"));
    bool progressed = false;
    try {
        (void)Job(plan).run([&](const Progress&) { progressed = true; }, CancelToken{});
        FAIL() << "expected qs::Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("config.json: a mix of methods is not offered for a mixture of experts"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_FALSE(progressed);
}

// Each expert exported under its own HF name in the GPTQ, compressed-tensors and FP8 layouts, the
// router left dense and named in modules_to_not_convert / ignore; each reads back through our reader
// as the job's quantized weights.
TEST(TinyMoe, ExportsKeepPerExpertNamesAndTheRouterDenseAndReadBack) {
    const fs::path source = fs::path(QS_TEST_DATA_DIR) / "moe" / "qwen3-moe-tiny";
    JobPlan plan;
    plan.checkpoint = source;
    plan.methods = parseMethodList("gptq4-sym,fp8,nvfp4,fp8-channel", 16);  // symmetric: GPTQ v1's own layout
    std::mt19937 rng(3);
    std::uniform_int_distribution<int> token(0, 255);
    plan.calibration.assign(4, std::vector<model::TokenId>(48));
    for (auto& s : plan.calibration)
        for (auto& t : s) t = token(rng);
    const JobResult r = Job(std::move(plan)).run({}, CancelToken{});
    const std::vector<std::pair<std::size_t, std::string>> exports{
        {0, "gptq"},
        {0, "ct-mixed"},
        {1, "fp8"},
        {2, "ct-nvfp4"},
        {3, ""}};  // "": fp8-channel's own, compressed-tensors FP8
    for (const auto& [index, format] : exports) {
        SCOPED_TRACE(format);
        const MethodResult& m = r.methods.at(index);
        ASSERT_TRUE(m.error.empty()) << m.error;
        const fs::path dir = fs::temp_directory_path() / ("qs_test_moe_export_" + std::to_string(index) + format + "_" +
                                                          std::to_string(::getpid()));
        fs::remove_all(dir);
        exportCheckpoint({source, dir, format, false, {}}, m, {}, CancelToken{});
        const io::Checkpoint exported = io::Checkpoint::open(dir);
        const formats::LinearReader reader(exported);
        int experts = 0;
        for (std::size_t layer = 0; layer < m.layers.size(); ++layer)
            for (const auto& [module, q] : m.layers[layer]) {
                const std::string prefix = "model.layers." + std::to_string(layer) + "." + module;
                const MatrixF expected = q->dequantize(), decoded = reader.decodeF32(prefix);
                ASSERT_EQ(decoded.rows(), expected.rows()) << prefix;
                // GPTQ's scales are stored in F16: a code step of at most 2^-11 relative.
                EXPECT_LE((decoded - expected).cwiseAbs().maxCoeff(), 2e-3f * expected.cwiseAbs().maxCoeff()) << prefix;
                experts += module.find(".experts.") != std::string::npos;
            }
        EXPECT_EQ(experts, 2 * 4 * 3);
        for (const char* router : {"model.layers.0.mlp.gate.weight", "model.layers.1.mlp.gate.weight"}) {
            ASSERT_NE(exported.find(router), nullptr) << router;
            EXPECT_EQ(exported.tensor(router).toF32(), io::Checkpoint::open(source).tensor(router).toF32()) << router;
        }
        const nlohmann::json config = io::readJsonFile(dir / "config.json", {}).at("quantization_config");
        for (const std::string layer : {"0", "1"}) {
            const std::string router = "model.layers." + layer + ".mlp.gate";
            if (format == "gptq") {  // GPTQModel's dynamic: "-:" excludes a module from quantization
                EXPECT_TRUE(config.at("dynamic").contains("-:^model\\.layers\\." + layer + "\\.mlp\\.gate$"))
                    << config.dump();
                continue;
            }
            const nlohmann::json dense =
                config.contains("ignore") ? config.at("ignore") : config.at("modules_to_not_convert");
            EXPECT_NE(std::find(dense.begin(), dense.end(), router), dense.end())
                << router << " not in " << dense.dump();
        }
        fs::remove_all(dir);
    }
}

// AWQ and GPTQ exports of both tiny MoE checkpoints run, through our format readers, as the Job's
// model computes: AWQ's shared scale of the experts' gate/up folded into the norm before the block
// and multiplied into the router's columns (so the routing does not change), each expert's down_proj
// scale folded into its up_proj's rows.
TEST(TinyMoe, AwqAndGptqExportsRunAsTheJobsModel) {
    for (const char* name : {"qwen3-moe-tiny", "mixtral-tiny"}) {
        SCOPED_TRACE(name);
        const fs::path source = fs::path(QS_TEST_DATA_DIR) / "moe" / name;
        JobPlan plan;
        plan.checkpoint = source;
        plan.methods = parseMethodList("awq4,gptq4", 16);
        std::mt19937 rng(21);
        std::uniform_int_distribution<int> token(0, 255);
        plan.calibration.assign(4, std::vector<model::TokenId>(48));
        for (auto& s : plan.calibration)
            for (auto& t : s) t = token(rng);
        const std::vector<model::TokenId> sequence(plan.calibration.front().begin(),
                                                   plan.calibration.front().begin() + 32);
        const JobResult r = Job(std::move(plan)).run({}, CancelToken{});
        const io::Checkpoint original = io::Checkpoint::open(source);
        const model::ModelConfig config = model::ModelConfig::fromCheckpoint(original);
        for (const MethodResult& m : r.methods) {
            SCOPED_TRACE(m.label());
            ASSERT_TRUE(m.error.empty()) << m.error;
            const fs::path dir =
                fs::temp_directory_path() / ("qs_test_moe_run_" + m.method.name + "_" + std::to_string(::getpid()));
            fs::remove_all(dir);
            exportCheckpoint({source, dir, "", false, {}}, m, {}, CancelToken{});
            const io::Checkpoint exported = io::Checkpoint::open(dir);

            auto jobModel = model::Transformer::fromCheckpoint(io::Checkpoint::open(source));
            for (std::size_t i = 0; i < m.layers.size(); ++i)
                for (const auto& [module, q] : m.layers[i])
                    jobModel.overrideLinear(static_cast<int>(i), module, [q] { return q->effectiveWeight(); });
            model::Transformer readBack(config, std::make_shared<DecodedWeights>(exported, config));
            const MatrixF want = jobModel.forward(sequence), got = readBack.forward(sequence);
            EXPECT_LT((got - want).cwiseAbs().maxCoeff(), 2e-3f * want.cwiseAbs().maxCoeff());

            const std::string router = config.layerPrefix(1) + config.moe.names.router() + ".weight";
            const MatrixF before = original.tensor(router).toMatrix(), after = exported.tensor(router).toMatrix();
            if (m.method.kind != MethodKind::Awq) {
                EXPECT_EQ(after, before) << "left as it was";
            } else {  // router · diag(s), s the experts' shared scale
                const auto& s = m.layers[1].at(config.moe.names.expert(0) + config.moe.names.gate)->inputScales;
                const MatrixF expected =
                    before * Eigen::Map<const VectorF>(s.data(), Eigen::Index(s.size())).asDiagonal();
                EXPECT_LT((after - expected).cwiseAbs().maxCoeff(), 1e-6f * expected.cwiseAbs().maxCoeff());
                EXPECT_NE(after, before);
            }
            fs::remove_all(dir);
        }
    }
}

// The memory estimate counts every expert: the kept layers grow with them, the calibration sums too.
TEST(TinyMoe, TheMemoryEstimateCountsTheExperts) {
    nlohmann::json j{{"model_type", "qwen3_moe"}, {"hidden_size", 2048},       {"intermediate_size", 6144},
                     {"num_hidden_layers", 4},    {"num_attention_heads", 32}, {"num_key_value_heads", 4},
                     {"head_dim", 128},           {"vocab_size", 1000},        {"moe_intermediate_size", 768},
                     {"num_experts", 128},        {"num_experts_per_tok", 8}};
    WorkloadShape shape;
    shape.config = model::ModelConfig::fromJson(j);
    shape.methods = 1;
    shape.keptBytesPerWeight = 1.0;
    const double big = double(predictedJobBytes(shape));
    j["num_experts"] = 8;
    shape.config = model::ModelConfig::fromJson(j);
    const double small = double(predictedJobBytes(shape));
    // 120 more experts of 3 x 2048 x 768 weights kept at 1 byte each in 4 layers: at least 2.2 GiB more.
    EXPECT_GT(big - small, 120.0 * 3 * 2048 * 768 * 4);
    shape.calibrationTokens = 4096;
    shape.sequentialMethods = 1;
    shape.moeAllExperts = false;
    const double calibrating = double(predictedJobBytes(shape));
    shape.moeAllExperts = true;
    const double calibratingAll = double(predictedJobBytes(shape));
    j["num_experts"] = 128;
    shape.config = model::ModelConfig::fromJson(j);
    // Routed only, each expert's two inputs hold f64 running sums while the layer is observed: 128 experts' of them.
    shape.moeAllExperts = false;
    const double routed = double(predictedJobBytes(shape)) - calibrating;
    EXPECT_GT(routed, big - small + 0.9 * 120.0 * (2048.0 * 2304 / 2 + 768.0 * 1024 / 2) * 8);
    // All experts on every token: their gate/up read one input, so only the down inputs are per expert.
    shape.moeAllExperts = true;
    const double all = double(predictedJobBytes(shape)) - calibratingAll;
    EXPECT_GT(all, big - small + 0.9 * 120.0 * (768.0 * 1024 / 2) * 8);
    EXPECT_LT(all, routed - 0.9 * 120.0 * (2048.0 * 2304 / 2) * 8);
}

}  // namespace
