// QuantScope's GGUF methods judged by llama.cpp itself (ctest -L interop):
//  * the ggml type llama-quantize gives each tensor is the type our mix gives it: for the demo and
//    stories260K (llama_model_quantize on their F32 export, types read back from its file with ggml's
//    parser) and for Llama-8B shapes (a dry run on a sparse F32 file written by ggml's own writer);
//  * our imatrix file is read by llama.cpp's loader (common_imatrix_load) and changes every linear its
//    quantizer writes, towards a lower error weighted by that importance; our own q4_k_m with the same
//    calibration is as good (the K-quant searches are ours, not bit for bit ggml's);
//  * our q8_0 / q4_k_m / q6_k exports of the demo and stories260K load without warnings, and the KL
//    against the original that llama.cpp's distributions give (against our forward pass of the
//    original) is our eval of the same file plus llama.cpp's own arithmetic on that file (its
//    activations quantized to Q8 blocks), within 10 %; for Q4_K_M, where the weights dominate, the two
//    KLs agree within 15 % outright (3.7 % on stories260K, 11.7 % on the demo);
//  * a budget's mix of ggml types (q3_K..q6_K per linear) written as one GGUF loads the same way, ggml's
//    parser reads each linear in the allocated type, and llama.cpp's KL is our eval's plus its arithmetic;
//  * a --rotate q8_0 / q4_k_m file (rotated linears, token_embd and an untied output, identity norms) runs in
//    llama.cpp at our eval's KL plus its arithmetic, as the plain files do; the same linears beside the
//    unrotated token_embd and norms are another model there too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <unistd.h>

#include "qs/io/checkpoint.h"
#include "qs/io/gguf_file.h"
#include "qs/io/gguf_names.h"
#include "qs/io/llama_ftype.h"
#include "qs/model/gguf_tokenizer.h"
#include "qs/model/tokenizer.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/checkpoint_eval.h"
#include "qs/pipeline/gguf_export.h"
#include "qs/pipeline/gguf_imatrix.h"
#include "qs/pipeline/gguf_result_export.h"
#include "qs/pipeline/gguf_type_mix.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/mixed_precision_allocation.h"
#include "qs/pipeline/mixed_precision_measure.h"
#include "qs/pipeline/mixed_precision_report.h"

#include "eight_expert_mixtral.h"
#include "interop_test_support.h"
#include "legacy_imatrix.h"
#include "llama_judge.h"
#include "llama_libraries.h"

using namespace qs;
using nlohmann::json;

namespace {

namespace fs = std::filesystem;

using interop::kDemo, interop::kStories, interop::kStoriesTokenizer;

class GgufMethodsInterop : public interop::JudgedTest {};

bool isStories(const fs::path& source) { return source == kStories; }

pipeline::GgufExportOptions exportOptions(const fs::path& source) {
    pipeline::GgufExportOptions options;
    if (isStories(source))
        options.sentencePiece =
            pipeline::GgufSentencePieceVocabulary{model::readLlama2cTokenizer(kStoriesTokenizer, 512), 1, 2, true};
    return options;
}

fs::path exportF32(const fs::path& source, const fs::path& destination) {
    pipeline::GgufExportOptions options = exportOptions(source);
    options.chooser = pipeline::uniformGgufType(io::GgmlType::F32);
    return pipeline::writeGguf(io::Checkpoint::open(source), destination, options, {}, CancelToken{});
}

// Our mix's type name (ggml's spelling) for every tensor of the model.
std::map<std::string, std::string> ourTypes(const model::ModelConfig& config, int fileType, bool importance) {
    const auto chooser = pipeline::ggufMixChooser(pipeline::ggufFileTypeOf(fileType), config, importance);
    std::map<std::string, std::string> out;
    for (const auto& t : pipeline::ggufTensorPlan(config))
        out[t.ggufName] = std::string(io::ggmlTypeTraits(chooser(t)).name);
    return out;
}

std::map<std::string, std::string> typesInFile(const interop::GgmlBase& ggml, const fs::path& file) {
    std::map<std::string, std::string> out;
    for (const auto& t : ggml.readGguf(file).tensors)
        out[t.name] = std::string(io::ggmlTypeTraits(io::GgmlType(t.type)).name);
    return out;
}

// "name: theirs vs ours" for every tensor the two maps disagree on (one missing on a side: "-").
std::vector<std::string> typeDifferences(const std::map<std::string, std::string>& theirs,
                                         const std::map<std::string, std::string>& ours) {
    std::set<std::string> names;
    for (const auto* m : {&theirs, &ours})
        for (const auto& [name, type] : *m) names.insert(name);
    std::vector<std::string> out;
    for (const auto& name : names) {
        const auto a = theirs.find(name), b = ours.find(name);
        const std::string x = a == theirs.end() ? "-" : a->second, y = b == ours.end() ? "-" : b->second;
        if (x != y) out.push_back(name + ": " + x + " vs " + y);
    }
    return out;
}

// Every file type QuantScope writes that llama-quantize would otherwise run without an imatrix.
std::vector<int> mixFileTypes() {
    std::vector<int> out;
    for (const auto& t : pipeline::ggufFileTypes()) out.push_back(t.fileType);
    return out;
}

pipeline::MethodResult runMethod(const fs::path& source, const std::string& method,
                                 const pipeline::TokenSequences& calibration) {
    pipeline::JobPlan plan;
    plan.checkpoint = source;
    plan.methods = {pipeline::parseMethod(method)};
    plan.calibration = calibration;
    pipeline::JobResult r = pipeline::Job(plan).run({}, CancelToken{});
    EXPECT_TRUE(r.methods.front().error.empty()) << r.methods.front().error;
    return std::move(r.methods.front());
}

// Mean over the positions that have a next token of KL(original || llama.cpp's distribution).
double klAgainstOriginal(const json& theirs, const MatrixF& originalLogits) {
    double sum = 0.0;
    const Eigen::Index positions = originalLogits.rows() - 1;
    for (Eigen::Index t = 0; t < positions; ++t) {
        const auto row = originalLogits.row(t).cast<double>();
        const double maxLogit = row.maxCoeff();
        const double logSum = maxLogit + std::log((row.array() - maxLogit).exp().sum());
        const auto& q = theirs.at(static_cast<std::size_t>(t));
        double kl = 0.0;
        for (Eigen::Index v = 0; v < row.size(); ++v) {
            const double logP = row[v] - logSum;
            const double qv = std::max(q.at(static_cast<std::size_t>(v)).get<double>(), 1e-30);
            kl += std::exp(logP) * (logP - std::log(qv));
        }
        sum += kl;
    }
    return sum / double(positions);
}

// llama.cpp's mean KL against the original over `windows` (its distributions against our forward pass of the
// original), and its own arithmetic on `file` (against our forward pass of the file's decoded weights).
struct LlamaKl {
    double theirs = 0.0, arithmetic = 0.0;
};

LlamaKl llamaKl(const json& answer, const io::Checkpoint& original, const fs::path& file,
                const pipeline::TokenSequences& windows) {
    model::Transformer reference = model::Transformer::fromCheckpoint(original);
    model::Transformer decoded = model::Transformer::fromCheckpoint(io::Checkpoint::open(file));
    LlamaKl kl;
    double positions = 0.0;
    for (std::size_t i = 0; i < windows.size(); ++i) {
        const MatrixF logits = reference.forward(windows[i]);
        const double n = double(logits.rows() - 1);
        kl.theirs += klAgainstOriginal(answer.at("distributions").at(i), logits) * n;
        kl.arithmetic += klAgainstOriginal(answer.at("distributions").at(i), decoded.forward(windows[i])) * n;
        positions += n;
    }
    kl.theirs /= positions;
    kl.arithmetic /= positions;
    return kl;
}

pipeline::TokenSequences windowsOf(const fs::path& source, const fs::path& file) {
    if (isStories(source)) {
        const auto tokenizer = model::Tokenizer::fromSentencePiece(model::readLlama2cTokenizer(kStoriesTokenizer, 512),
                                                                   1, 2, "tok512.bin");
        const auto ids = tokenizer.encode(interop::kStoryOpening, {.addBos = true});
        const std::size_t half = ids.size() / 2;
        return {std::vector<model::TokenId>(ids.begin(), ids.begin() + long(half)),
                std::vector<model::TokenId>(ids.begin() + long(half), ids.end())};
    }
    return pipeline::sharedTokenWindows(io::Checkpoint::open(source), io::Checkpoint::open(file),
                                        pipeline::loadTexts(kDemo / "eval.txt"), 4, 128, "eval.txt");
}

}  // namespace

TEST_F(GgufMethodsInterop, LlamaQuantizeGivesTheSmallModelsTensorsOurTypes) {
    const interop::LlamaQuantizer quantizer;
    const interop::GgmlBase ggml;
    for (const fs::path& source : {kDemo, kStories}) {
        const fs::path f32 = exportF32(source, dir_ / (source.filename().string() + "-f32.gguf"));
        const model::ModelConfig config = model::ModelConfig::fromCheckpoint(io::Checkpoint::open(source));
        for (const int fileType : mixFileTypes()) {
            const fs::path out = dir_ / (source.filename().string() + "-" + std::to_string(fileType) + ".gguf");
            quantizer.quantize(f32, out, fileType, 2);
            EXPECT_EQ(typesInFile(ggml, out), ourTypes(config, fileType, false))
                << source << " " << io::llamaFtypeName(fileType);
            fs::remove(out);
        }
    }
}

TEST_F(GgufMethodsInterop, LlamaQuantizeGivesLlama8BShapesOurTypes) {
    model::ModelConfig c;
    c.modelType = "llama", c.hiddenSize = 4096, c.intermediateSize = 14336, c.numLayers = 32, c.numHeads = 32,
    c.numKvHeads = 8;
    c.headDim = 128, c.vocabSize = 128256, c.maxPositionEmbeddings = 8192, c.rmsNormEps = 1e-5, c.ropeTheta = 500000.0;
    using Key = interop::GgmlBase::SparseKey;
    const std::vector<Key> keys = {
        {"general.architecture", "llama"},
        {"llama.block_count", "", 32, 0, Key::U32},
        {"llama.context_length", "", 8192, 0, Key::U32},
        {"llama.embedding_length", "", 4096, 0, Key::U32},
        {"llama.feed_forward_length", "", 14336, 0, Key::U32},
        {"llama.attention.head_count", "", 32, 0, Key::U32},
        {"llama.attention.head_count_kv", "", 8, 0, Key::U32},
        {"llama.attention.layer_norm_rms_epsilon", "", 0, 1e-5f, Key::F32},
        {"llama.rope.dimension_count", "", 128, 0, Key::U32},
        {"llama.rope.freq_base", "", 0, 500000.0f, Key::F32},
        {"llama.vocab_size", "", 128256, 0, Key::U32},
        {"general.file_type", "", 0, 0, Key::U32},
    };
    std::vector<interop::GgmlBase::SparseTensor> tensors;
    for (const auto& t : pipeline::ggufTensorPlan(c)) tensors.push_back({t.ggufName, 0, t.shape});
    const fs::path file = dir_ / "llama-8b-shapes-f32.gguf";
    interop::GgmlBase().writeSparseGguf(file, keys, tensors);
    EXPECT_GT(fs::file_size(file), 30'000'000'000u);  // 8.0 G weights in f32, stored as a hole
    const interop::LlamaQuantizer quantizer;
    for (const int fileType : mixFileTypes()) {
        const auto theirs = quantizer.dryRunTypes(file, fileType);
        EXPECT_EQ(theirs.size(), tensors.size()) << io::llamaFtypeName(fileType);
        EXPECT_EQ(theirs, ourTypes(c, fileType, false)) << io::llamaFtypeName(fileType);
    }
}

// The tiny checkpoints of every architecture QuantScope writes as GGUF: MoE (stacked experts, the router
// kept F32), gpt-oss (its gate/up split, biases, sinks), Phi-3 (attn_qkv follows attn_v's rules in
// llama.cpp's category_is_attn_v), Gemma 3 (tied embeddings) and DeepSeek-V3 (the latent attention's
// tensors, kv_b_proj split into attn_k_b and attn_v_b).
TEST_F(GgufMethodsInterop, LlamaQuantizeGivesTheTinyArchitecturesTensorsOurTypes) {
    const interop::LlamaQuantizer quantizer;
    const interop::GgmlBase ggml;
    const fs::path data = QS_TEST_DATA_DIR;
    for (const fs::path& source :
         {data / "moe" / "qwen3-moe-tiny", data / "moe" / "mixtral-tiny", data / "gptoss" / "gptoss-tiny",
          data / "phi3" / "tiny-random", data / "gemma3" / "gemma3-text-tiny", data / "moe" / "deepseek-v3-tiny",
          data / "moe" / "llama4-tiny"}) {
        SCOPED_TRACE(source.filename().string());
        const fs::path f32 = exportF32(source, dir_ / (source.filename().string() + "-f32.gguf"));
        const model::ModelConfig config = model::ModelConfig::fromCheckpoint(io::Checkpoint::open(source));
        for (const int fileType : mixFileTypes()) {
            const fs::path out = dir_ / (source.filename().string() + "-" + std::to_string(fileType) + ".gguf");
            quantizer.quantize(f32, out, fileType, 2);
            std::map<std::string, std::string> theirs = typesInFile(ggml, out);
            // Llama 4's llama3 scaling: rope_freqs, written beside the plan, stays F32 in either file.
            if (theirs.contains("rope_freqs.weight")) {
                EXPECT_EQ(theirs.extract("rope_freqs.weight").mapped(), "f32");
            }
            EXPECT_EQ(typeDifferences(theirs, ourTypes(config, fileType, false)), std::vector<std::string>{})
                << io::llamaFtypeName(fileType);
            fs::remove(out);
        }
        fs::remove(f32);
    }
}

namespace {

// llama-quantize --dry-run on a sparse F32 file of `config`'s shapes (8 G weights and more, stored as a
// hole) against our mix, for every file type.
void expectDryRunTypesAreOurs(const model::ModelConfig& c, const std::string& arch, const fs::path& file) {
    using Key = interop::GgmlBase::SparseKey;
    const auto u32 = [&](const std::string& key, std::int64_t v) {
        return Key{arch + "." + key, "", std::uint32_t(v), 0, Key::U32};
    };
    std::vector<Key> keys = {
        {"general.architecture", arch},
        u32("block_count", c.numLayers),
        u32("context_length", c.maxPositionEmbeddings),
        u32("embedding_length", c.hiddenSize),
        u32("feed_forward_length", c.intermediateSize),
        u32("attention.head_count", c.numHeads),
        u32("attention.head_count_kv", c.numKvHeads),
        u32("attention.key_length", c.headDim),
        u32("attention.value_length", c.headDim),
        {arch + ".attention.layer_norm_rms_epsilon", "", 0, float(c.rmsNormEps), Key::F32},
        u32("rope.dimension_count", c.headDim),
        {arch + ".rope.freq_base", "", 0, float(c.ropeTheta), Key::F32},
        u32("vocab_size", c.vocabSize),
        u32("expert_count", c.moe.numExperts),
        u32("expert_used_count", c.moe.numExpertsPerToken),
        {"general.file_type", "", 0, 0, Key::U32},
    };
    if (arch != "llama") keys.push_back(u32("expert_feed_forward_length", c.moe.expertIntermediateSize));
    std::vector<interop::GgmlBase::SparseTensor> tensors;
    for (const auto& t : pipeline::ggufTensorPlan(c)) tensors.push_back({t.ggufName, 0, t.shape});
    interop::GgmlBase().writeSparseGguf(file, keys, tensors);
    const interop::LlamaQuantizer quantizer;
    for (const int fileType : mixFileTypes()) {
        const auto theirs = quantizer.dryRunTypes(file, fileType);
        EXPECT_EQ(theirs.size(), tensors.size()) << io::llamaFtypeName(fileType);
        EXPECT_EQ(theirs, ourTypes(c, fileType, false)) << io::llamaFtypeName(fileType);
    }
    fs::remove(file);
}

// The config.json of Mixtral-8x7B and of Qwen3-30B-A3B (their Hugging Face repositories), as read.
model::ModelConfig mixtral8x7B() {
    return model::ModelConfig::fromJson(json{{"model_type", "mixtral"},
                                             {"architectures", {"MixtralForCausalLM"}},
                                             {"hidden_size", 4096},
                                             {"intermediate_size", 14336},
                                             {"num_hidden_layers", 32},
                                             {"num_attention_heads", 32},
                                             {"num_key_value_heads", 8},
                                             {"num_local_experts", 8},
                                             {"num_experts_per_tok", 2},
                                             {"vocab_size", 32000},
                                             {"max_position_embeddings", 32768},
                                             {"rms_norm_eps", 1e-5},
                                             {"rope_theta", 1e6},
                                             {"tie_word_embeddings", false},
                                             {"hidden_act", "silu"}},
                                        "Mixtral-8x7B config.json");
}

model::ModelConfig qwen3_30B_A3B() {
    return model::ModelConfig::fromJson(json{{"model_type", "qwen3_moe"},
                                             {"architectures", {"Qwen3MoeForCausalLM"}},
                                             {"hidden_size", 2048},
                                             {"intermediate_size", 6144},
                                             {"moe_intermediate_size", 768},
                                             {"num_hidden_layers", 48},
                                             {"num_attention_heads", 32},
                                             {"num_key_value_heads", 4},
                                             {"head_dim", 128},
                                             {"num_experts", 128},
                                             {"num_experts_per_tok", 8},
                                             {"norm_topk_prob", true},
                                             {"decoder_sparse_step", 1},
                                             {"mlp_only_layers", json::array()},
                                             {"vocab_size", 151936},
                                             {"max_position_embeddings", 40960},
                                             {"rms_norm_eps", 1e-6},
                                             {"rope_theta", 1e6},
                                             {"tie_word_embeddings", false},
                                             {"hidden_act", "silu"}},
                                        "Qwen3-30B-A3B config.json");
}

}  // namespace

// Mixtral-8x7B's shapes (llama with 8 experts: attn_k / attn_v Q8_0, attn_output Q5_K) and
// Qwen3-30B-A3B's (qwen3moe, 128 experts of 768): llama-quantize's dry run gives every tensor our type.
TEST_F(GgufMethodsInterop, LlamaQuantizeGivesMixtral8x7BAndQwen3MoeShapesOurTypes) {
    expectDryRunTypesAreOurs(mixtral8x7B(), "llama", dir_ / "mixtral-8x7b-shapes-f32.gguf");
    expectDryRunTypesAreOurs(qwen3_30B_A3B(), "qwen3moe", dir_ / "qwen3-30b-a3b-shapes-f32.gguf");
}

// A MoE model quantized by the Job with llama.cpp's Q4_K_M and Q8_0 (every expert of a kind in its stacked
// tensor's type, the 8-expert rules) loads in llama.cpp without a warning; our eval of the file (read back)
// is the Job's KL, and llama.cpp's KL against the original is that plus its own arithmetic on the file.
TEST_F(GgufMethodsInterop, AMoeModelsGgufFromTheJobLoadsInLlamaCppWithTheJobsKl) {
    const fs::path source = test::writeEightExpertMixtral(dir_ / "mixtral-8e");
    const io::Checkpoint original = io::Checkpoint::open(source);
    pipeline::JobPlan plan;
    plan.checkpoint = source;
    plan.methods = pipeline::parseMethodList("q4_k_m,q8_0");
    plan.calibration = test::syntheticTokens(8, 64, 320, 3);
    plan.evaluation = test::syntheticTokens(6, 64, 320, 4);
    const pipeline::JobResult result = pipeline::Job(plan).run({}, CancelToken{});
    model::Transformer reference = model::Transformer::fromCheckpoint(original);
    for (const pipeline::MethodResult& r : result.methods) {
        ASSERT_TRUE(r.error.empty()) << r.error;
        const fs::path file = pipeline::writeGgufResult(original, r, dir_ / ("mixtral-8e-" + r.method.name + ".gguf"),
                                                        {}, {}, CancelToken{});
        const json answer = interop::runLlamaJudge(
            {{"model", file.string()}, {"evaluate", plan.evaluation}, {"vocabulary", 320}, {"threads", 2}});
        EXPECT_EQ(interop::missingKeyWarnings(answer), std::vector<std::string>{}) << file;
        for (const auto& w : answer.at("warnings"))
            std::printf("llama.cpp warning: %s\n", w.get<std::string>().c_str());
        // llama.cpp's KL against the original, and its own arithmetic on this very file: its distributions
        // against our forward pass of the file read back (the stacked experts as per-expert slices).
        model::Transformer decoded = model::Transformer::fromCheckpoint(io::Checkpoint::open(file));
        double theirs = 0.0, arithmetic = 0.0, positions = 0.0;
        for (std::size_t i = 0; i < plan.evaluation.size(); ++i) {
            const MatrixF logits = reference.forward(plan.evaluation[i]);
            const double n = double(logits.rows() - 1);
            theirs += klAgainstOriginal(answer.at("distributions").at(i), logits) * n;
            arithmetic += klAgainstOriginal(answer.at("distributions").at(i), decoded.forward(plan.evaluation[i])) * n;
            positions += n;
        }
        theirs /= positions;
        arithmetic /= positions;
        const double ours =
            pipeline::evaluateCheckpoints({source, file, plan.evaluation}, {}, CancelToken{}).kl.meanKld.value;
        std::printf(
            "8-expert Mixtral %s (%.3f bpw): mean KL vs the original: llama.cpp %.4g, the Job %.4g, QuantScope eval of "
            "the file "
            "%.4g; llama.cpp's arithmetic on the file %.3g; eval + arithmetic %.4g (%+.1f %%)\n",
            r.method.name.c_str(), r.bitsPerWeight, theirs, r.kl.meanKld.value, ours, arithmetic, ours + arithmetic,
            100.0 * (theirs / (ours + arithmetic) - 1.0));
        EXPECT_EQ(ours, r.kl.meanKld.value);  // the file holds what the Job measured
        // llama.cpp runs the file as we decode it, up to its Q8 activations, whose KL adds to the weights'
        // (seen: 0.0079 and 0.0055 on this model's sharp distributions; eval + arithmetic -3.1 % and -4.8 %
        // with -march=native on AVX2 and AVX-512). The sum is only first-order, and on this sharp model the
        // f32 rounding of our forward pass alone moves the arithmetic term by 14 %: 0.0055 -> 0.0063 for q8_0
        // built for plain x86-64 instead of AVX2, -17 % there, where the weights' own KL is half of it.
        EXPECT_LT(arithmetic, 0.01) << r.method.name;
        EXPECT_NEAR(theirs, ours + arithmetic, 0.25 * theirs) << r.method.name;
    }

    // The Job's calibration as an imatrix: llama.cpp's loader reads a row per expert of each stacked
    // tensor, and llama-quantize quantizes the model's F32 export with it.
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(original);
    const fs::path imatrix = pipeline::writeImatrix(result.methods.front(), config, dir_ / "mixtral-8e.imatrix.gguf",
                                                    {{"synthetic"}, 8, 64});
    const auto entries = interop::loadImatrixAsLlamaQuantize(imatrix);
    ASSERT_TRUE(entries.contains("blk.1.ffn_gate_exps.weight"));
    EXPECT_EQ(entries.at("blk.1.ffn_gate_exps.weight").size(), 8u * 256u);
    EXPECT_EQ(entries.size(), 2u * 7u);
    const fs::path f32 = exportF32(source, dir_ / "mixtral-8e-f32.gguf");
    interop::LlamaQuantizer().quantize(f32, dir_ / "mixtral-8e-llama-q4_k_m.gguf", 15, 2, &entries);
    EXPECT_EQ(typeDifferences(typesInFile(interop::GgmlBase(), dir_ / "mixtral-8e-llama-q4_k_m.gguf"),
                              ourTypes(config, 15, true)),
              std::vector<std::string>{});
}

// DeepSeek-V3's tiny checkpoint quantized by the Job with Q4_K_M (kv_b_proj in F16, written split as attn_k_b
// and attn_v_b): llama.cpp loads the file without a warning, and where the weights dominate (Q4_K_M) its KL
// against the original is the Job's within 15 %, as for the demo above (seen: 1.83 against 1.78; the tiny
// model's sharp attention and routing make every KL large). llama.cpp's own arithmetic (its Q8 activations) is not
// taken apart here as the other tests do (this test predates the deepseek2 read-back): with Q8_0, where it
// dominates, llama.cpp's KL was 0.377 against the Job's 0.255.
TEST_F(GgufMethodsInterop, DeepseekV3sGgufFromTheJobRunsInLlamaCppWithTheJobsKl) {
    const fs::path source = fs::path(QS_TEST_DATA_DIR) / "moe" / "deepseek-v3-tiny";
    const io::Checkpoint original = io::Checkpoint::open(source);
    const auto windows = [&](const char* text, int samples) {
        return pipeline::tokenWindows(model::Tokenizer::fromFile(source), pipeline::loadTexts(kDemo / text), samples,
                                      128, text);
    };
    pipeline::JobPlan plan;
    plan.checkpoint = source;
    plan.methods = pipeline::parseMethodList("q4_k_m");
    plan.calibration = windows("calibration.txt", 8);
    plan.evaluation = windows("eval.txt", 4);
    const pipeline::JobResult result = pipeline::Job(plan).run({}, CancelToken{});
    model::Transformer reference = model::Transformer::fromCheckpoint(original);
    for (const pipeline::MethodResult& r : result.methods) {
        ASSERT_TRUE(r.error.empty()) << r.error;
        const fs::path file = pipeline::writeGgufResult(original, r, dir_ / ("deepseek-" + r.method.name + ".gguf"), {},
                                                        {}, CancelToken{});
        const json answer = interop::runLlamaJudge(
            {{"model", file.string()}, {"evaluate", plan.evaluation}, {"vocabulary", 320}, {"threads", 2}});
        EXPECT_EQ(interop::missingKeyWarnings(answer), std::vector<std::string>{}) << file;
        double theirs = 0.0, positions = 0.0;
        for (std::size_t i = 0; i < plan.evaluation.size(); ++i) {
            const MatrixF logits = reference.forward(plan.evaluation[i]);
            const double n = double(logits.rows() - 1);
            theirs += klAgainstOriginal(answer.at("distributions").at(i), logits) * n;
            positions += n;
        }
        theirs /= positions;
        std::printf("deepseek-v3-tiny %s (%.3f bpw): mean KL vs the original: llama.cpp %.4g, the Job %.4g\n",
                    r.method.name.c_str(), r.bitsPerWeight, theirs, r.kl.meanKld.value);
        EXPECT_NEAR(theirs, r.kl.meanKld.value, 0.15 * theirs) << r.method.name;
    }
}

// `--imatrix FILE` weighs each column as llama-quantize --imatrix FILE does: for the GGUF format and the
// legacy .dat alike, QuantScope's reading (Σx² over its count) equals what llama.cpp's loader
// (common_imatrix_load, then tools/quantize's division) makes of the same file, bit for bit.
TEST_F(GgufMethodsInterop, OurImatrixReaderWeighsAsLlamaQuantizeLoadsIt) {
    const auto calibration = pipeline::tokenWindows(
        model::Tokenizer::fromFile(kDemo), pipeline::loadTexts(kDemo / "calibration.txt"), 8, 128, "calibration.txt");
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(io::Checkpoint::open(kDemo));
    const fs::path gguf = pipeline::writeImatrix(runMethod(kDemo, "q4_k_m", calibration), config,
                                                 dir_ / "reader.imatrix.gguf", {{"calibration.txt"}, 8, 128});
    const fs::path legacy = dir_ / "reader.imatrix.dat";
    qs::test::writeLegacyImatrix(legacy, pipeline::Imatrix::read(gguf), 8, "calibration.txt");
    for (const fs::path& file : {gguf, legacy}) {
        const pipeline::Imatrix ours = pipeline::Imatrix::read(file);
        const auto theirs = interop::loadImatrixAsLlamaQuantize(file);
        ASSERT_EQ(theirs.size(), 14u) << file;
        int compared = 0;
        for (int layer = 0; layer < config.numLayers; ++layer)
            for (const char* module : {"self_attn.q_proj", "self_attn.o_proj", "mlp.up_proj", "mlp.down_proj"}) {
                const std::string name = pipeline::imatrixPlaceOf(config, layer, module).names.front();
                const std::vector<float>& want = theirs.at(name);
                const qs::quant::InputImportance got =
                    ours.importanceOf(config, layer, module, static_cast<std::int64_t>(want.size()));
                ASSERT_EQ(got.sumSquares.size(), want.size()) << file << " " << name;
                for (std::size_t i = 0; i < want.size(); ++i)
                    ASSERT_EQ(got.sumSquares[i] / static_cast<float>(got.count), want[i])
                        << file << " " << name << " column " << i;
                ++compared;
            }
        EXPECT_EQ(compared, 8);
    }
}

TEST_F(GgufMethodsInterop, LlamaQuantizeReadsOurImatrixAndWeighsTheErrorAsWeDo) {
    const auto calibration = pipeline::tokenWindows(
        model::Tokenizer::fromFile(kDemo), pipeline::loadTexts(kDemo / "calibration.txt"), 8, 128, "calibration.txt");
    const pipeline::MethodResult ours = runMethod(kDemo, "q4_k_m", calibration);
    const fs::path imatrix =
        pipeline::writeImatrix(ours, model::ModelConfig::fromCheckpoint(io::Checkpoint::open(kDemo)),
                               dir_ / "demo.imatrix.gguf", {{"calibration.txt"}, 8, 128});
    std::vector<std::string> datasets;
    int chunks = 0;
    const auto entries = interop::loadImatrixAsLlamaQuantize(imatrix, &datasets, &chunks);
    EXPECT_EQ(entries.size(), 14u);  // 7 linears x 2 layers
    EXPECT_EQ(datasets, std::vector<std::string>{"calibration.txt"});
    EXPECT_EQ(chunks, 8);
    ASSERT_EQ(entries.count("blk.1.ffn_down.weight"), 1u);
    EXPECT_EQ(entries.at("blk.1.ffn_down.weight").size(), 768u);

    const fs::path f32 = exportF32(kDemo, dir_ / "demo-f32.gguf");
    const interop::LlamaQuantizer quantizer;
    const fs::path withImatrix = dir_ / "llama-q4_k_m-imatrix.gguf", without = dir_ / "llama-q4_k_m.gguf";
    quantizer.quantize(f32, withImatrix, 15, 2, &entries);
    quantizer.quantize(f32, without, 15, 2);
    const fs::path mine =
        pipeline::writeGgufResult(io::Checkpoint::open(kDemo), ours, dir_ / "ours-q4_k_m.gguf", {}, {}, CancelToken{});
    const io::GgufFile original = io::GgufFile::open(f32), theirs = io::GgufFile::open(withImatrix),
                       plain = io::GgufFile::open(without), ourFile = io::GgufFile::open(mine);
    // Per linear, the error weighted by the importance llama.cpp read from our file (the diagonal
    // of the output error on the calibration): llama-quantize with our imatrix, without it, and ours.
    double theirsError = 0, plainError = 0, ourError = 0;
    int changed = 0;
    for (const auto& [name, importance] : entries) {
        const std::vector<float> w = original.tensor(name).toF32(), a = theirs.tensor(name).toF32(),
                                 p = plain.tensor(name).toF32(), o = ourFile.tensor(name).toF32();
        ASSERT_EQ(w.size() % importance.size(), 0u) << name;
        const auto weighted = [&](const std::vector<float>& q) {
            double e = 0;
            for (std::size_t i = 0; i < w.size(); ++i)
                e += importance[i % importance.size()] * double(w[i] - q[i]) * double(w[i] - q[i]);
            return e;
        };
        theirsError += weighted(a), plainError += weighted(p), ourError += weighted(o);
        changed += a != p;
        // The imatrix's type rules are llama.cpp's (Q4_K_M has none that depend on it): same types.
        EXPECT_EQ(*theirs.find(name)->ggmlType, *ourFile.find(name)->ggmlType) << name;
    }
    std::printf(
        "demo Q4_K_M, importance-weighted squared error of the linears: llama-quantize %.6g, with our imatrix %.6g, "
        "QuantScope %.6g\n",
        plainError, theirsError, ourError);
    EXPECT_EQ(changed, 14);                   // every linear moved
    EXPECT_LT(theirsError, plainError);       // towards what our calibration weighs
    EXPECT_LE(ourError, 1.02 * theirsError);  // and ours is as good as llama.cpp's with the same importance
    // The tensors the imatrix has no entry for are written alike (the vectors in F32, bit for bit).
    for (const io::TensorInfo& t : theirs.tensors())
        if (*t.ggmlType == io::GgmlType::F32) {
            const auto a = theirs.view(t).bytes(), b = ourFile.view(*ourFile.find(t.name)).bytes();
            ASSERT_EQ(a.size(), b.size()) << t.name;
            EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0) << t.name;
        }
}

TEST_F(GgufMethodsInterop, ExportsLoadWithoutWarningsAndLlamaCppsKlAgreesWithOurEval) {
    for (const fs::path& source : {kDemo, kStories}) {
        const io::Checkpoint original = io::Checkpoint::open(source);
        const model::ModelConfig config = model::ModelConfig::fromCheckpoint(original);
        for (const std::string method : {"q8_0", "q4_k_m", "q6_k"}) {
            const pipeline::MethodResult result = runMethod(source, method, {});
            const fs::path file = pipeline::writeGgufResult(
                original, result, dir_ / (source.filename().string() + "-" + method + ".gguf"), exportOptions(source),
                {}, CancelToken{});
            const pipeline::TokenSequences windows = windowsOf(source, file);
            const json answer = interop::runLlamaJudge(
                {{"model", file.string()}, {"evaluate", windows}, {"vocabulary", config.vocabSize}, {"threads", 2}});
            EXPECT_EQ(interop::missingKeyWarnings(answer), std::vector<std::string>{}) << file;
            for (const auto& w : answer.at("warnings"))
                std::printf("llama.cpp warning: %s\n", w.get<std::string>().c_str());
            // llama.cpp's KL against the original, and its own arithmetic on this very file: its
            // distributions against our forward pass of the same (decoded) weights.
            const auto [theirs, arithmetic] = llamaKl(answer, original, file, windows);
            const auto ours = pipeline::evaluateCheckpoints({source, file, windows}, {}, CancelToken{});
            const double ourKl = ours.kl.meanKld.value;
            std::printf(
                "%s %s (%.3f bpw): mean KL vs the original: llama.cpp %.4g, QuantScope eval %.4g (%+.1f %%); "
                "llama.cpp's "
                "arithmetic on the file %.3g; eval + arithmetic %.4g (%+.1f %%)\n",
                source.filename().c_str(), method.c_str(), result.bitsPerWeight, theirs, ourKl,
                100.0 * (theirs / ourKl - 1.0), arithmetic, ourKl + arithmetic,
                100.0 * (theirs / (ourKl + arithmetic) - 1.0));
            EXPECT_GT(ourKl, 0.0);
            // llama.cpp's CPU kernels quantize the activations for quantized weights (Q8_0 / Q8_K
            // blocks): on these small models that adds as much KL as Q8_0's weights do. Its KL is our
            // eval's plus that arithmetic (measured apart on the same file), within 10 % (seen: -3.7 %
            // to +5.3 %); the raw figures are in docs/formats/gguf.md.
            EXPECT_LT(arithmetic, 5e-4) << source << " " << method;
            EXPECT_NEAR(theirs, ourKl + arithmetic, 0.10 * theirs) << source << " " << method;
            if (method == "q4_k_m") {
                EXPECT_NEAR(theirs, ourKl, 0.15 * ourKl) << source << " " << method;
            }
        }
    }
}

TEST_F(GgufMethodsInterop, AMixOfGgmlTypesLoadsWithTheAllocatedTypesAndLlamaCppsKlAgreesWithOurEval) {
    const io::Checkpoint original = io::Checkpoint::open(kDemo);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(original);
    const auto tokenizer = model::Tokenizer::fromFile(kDemo);
    pipeline::JobPlan plan;
    plan.checkpoint = kDemo;
    plan.calibration =
        pipeline::tokenWindows(tokenizer, pipeline::loadTexts(kDemo / "calibration.txt"), 8, 128, "calibration.txt");
    plan.evaluation = pipeline::tokenWindows(tokenizer, pipeline::loadTexts(kDemo / "eval.txt"), 8, 128, "eval.txt");
    const auto candidates = pipeline::parseMixMethodList("q3_K,q4_K,q5_K,q6_K");
    const auto table =
        pipeline::measureSensitivity(plan, candidates, pipeline::Sensitivity::GroupKl, {}, CancelToken{});
    const pipeline::MixedPrecisionPlanner planner(table, {}, pipeline::namesOf(candidates));
    const pipeline::MixedAllocation allocation = planner.at(4.5);
    plan.mixed = {planner.methods(allocation, "mixed 4.50 bpw")};
    const pipeline::MethodResult mixed = pipeline::Job(plan).run({}, CancelToken{}).methods.front();
    ASSERT_TRUE(mixed.error.empty()) << mixed.error;
    const fs::path file =
        pipeline::writeGgufMixResult(original, mixed, dir_ / "demo-mixed.gguf", {}, {}, CancelToken{});

    // ggml's own parser: each linear in the type the allocation gave its group, the rest F16 / F32.
    const auto types = typesInFile(interop::GgmlBase(), file);
    std::set<std::string> used;
    for (std::size_t g = 0; g < table.groups.size(); ++g)
        for (const auto& module : table.groups[g].modules) {
            const std::string name =
                *io::ggufNameOfHfTensor(pipeline::moduleName(table.groups[g].layer, module) + ".weight");
            const std::string want = table.candidates[std::size_t(allocation.choice[g])].name;
            EXPECT_EQ(types.at(name), want) << name;
            used.insert(want);
        }
    EXPECT_GE(used.size(), 2u) << pipeline::allocationSummary(table, allocation);
    EXPECT_EQ(types.at("token_embd.weight"), "f16");
    EXPECT_EQ(types.at("blk.0.attn_norm.weight"), "f32");

    const pipeline::TokenSequences windows = windowsOf(kDemo, file);
    const json answer = interop::runLlamaJudge(
        {{"model", file.string()}, {"evaluate", windows}, {"vocabulary", config.vocabSize}, {"threads", 2}});
    EXPECT_EQ(interop::missingKeyWarnings(answer), std::vector<std::string>{}) << file;
    const auto [theirs, arithmetic] = llamaKl(answer, original, file, windows);
    const double ourKl = pipeline::evaluateCheckpoints({kDemo, file, windows}, {}, CancelToken{}).kl.meanKld.value;
    std::printf(
        "demo mixed %s (%.3f bpw): mean KL vs the original: llama.cpp %.4g, QuantScope eval %.4g; llama.cpp's "
        "arithmetic on the "
        "file %.3g; eval + arithmetic %.4g (%+.1f %%)\n",
        pipeline::allocationSummary(table, allocation).c_str(), mixed.bitsPerWeight, theirs, ourKl, arithmetic,
        ourKl + arithmetic, 100.0 * (theirs / (ourKl + arithmetic) - 1.0));
    EXPECT_GT(ourKl, 0.0);
    EXPECT_LT(arithmetic, 5e-4);  // llama.cpp runs the file as we decode it, up to its Q8 activations
    EXPECT_NEAR(theirs, ourKl + arithmetic, 0.10 * theirs);
}

// --rotate for a GGUF method (issue 44): the file holds the rotated linears, token_embd E Q and an output.weight
// L diag(g) Q of its own (the demo ties them), norms as identities: a plain GGUF that llama.cpp runs at our eval's
// KL (plus its arithmetic, as above). Negative control: the same rotated linears beside the source's token_embd
// and norms (the result's rotation forgotten) are another model in llama.cpp too.
TEST_F(GgufMethodsInterop, ARotatedGgufMethodsFileRunsInLlamaCppWithOurEvalsKl) {
    const io::Checkpoint original = io::Checkpoint::open(kDemo);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(original);
    const auto tokenizer = model::Tokenizer::fromFile(kDemo);
    for (const std::string method : {"q8_0", "q4_k_m"})
        for (const bool rotate : {false, true}) {
            pipeline::JobPlan plan;
            plan.checkpoint = kDemo;
            plan.methods = {pipeline::parseMethod(method)};
            plan.calibration = pipeline::tokenWindows(tokenizer, pipeline::loadTexts(kDemo / "calibration.txt"), 4, 128,
                                                      "calibration.txt");
            plan.rotate = rotate;
            plan.rotationSeed = 11;
            pipeline::MethodResult result = pipeline::Job(plan).run({}, CancelToken{}).methods.front();
            ASSERT_TRUE(result.error.empty()) << result.error;
            const std::string name = "demo-" + method + (rotate ? "-rotated" : "");
            const fs::path file =
                pipeline::writeGgufResult(original, result, dir_ / (name + ".gguf"), {}, {}, CancelToken{});
            const pipeline::TokenSequences windows = windowsOf(kDemo, file);
            json question = {
                {"model", file.string()}, {"evaluate", windows}, {"vocabulary", config.vocabSize}, {"threads", 2}};
            const json answer = interop::runLlamaJudge(question);
            EXPECT_EQ(interop::missingKeyWarnings(answer), std::vector<std::string>{}) << file;
            const LlamaKl kl = llamaKl(answer, original, file, windows);
            const double ourKl =
                pipeline::evaluateCheckpoints({kDemo, file, windows}, {}, CancelToken{}).kl.meanKld.value;
            std::printf(
                "%s (%.3f bpw): mean KL vs the original: llama.cpp %.4g, QuantScope eval %.4g (%+.1f %%); "
                "llama.cpp's arithmetic on the file %.3g; eval + arithmetic %.4g (%+.1f %%)\n",
                name.c_str(), result.bitsPerWeight, kl.theirs, ourKl, 100.0 * (kl.theirs / ourKl - 1.0), kl.arithmetic,
                ourKl + kl.arithmetic, 100.0 * (kl.theirs / (ourKl + kl.arithmetic) - 1.0));
            EXPECT_GT(ourKl, 0.0);
            EXPECT_LT(kl.arithmetic, 5e-4) << name;
            EXPECT_NEAR(kl.theirs, ourKl + kl.arithmetic, 0.10 * kl.theirs) << name;
            if (!rotate) continue;
            result.rotationSeed.reset();
            const fs::path unrotated =
                pipeline::writeGgufResult(original, result, dir_ / (name + "-forgotten.gguf"), {}, {}, CancelToken{});
            question["model"] = unrotated.string();
            const LlamaKl forgotten = llamaKl(interop::runLlamaJudge(question), original, unrotated, windows);
            std::printf("%s written unrotated beside the rotated linears: llama.cpp's KL %.4g\n", name.c_str(),
                        forgotten.theirs);
            EXPECT_GT(forgotten.theirs, 100.0 * kl.theirs) << name;
        }
}
