// The bundled demo checkpoint (resources/demo, made by scripts/train-demo-model.py) against the
// training script's own reference: its tokenizer is a valid byte-level tokenizer (text -> exactly its
// UTF-8 bytes), its config and tensors are what Hugging Face's Qwen3ForCausalLM expects, and our f32
// forward pass reproduces the script's logits (BF16 weights, PyTorch forward in float64) and held-out
// perplexity.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/io/checkpoint.h"
#include "qs/io/safetensors_file.h"
#include "qs/model/tokenizer.h"
#include "qs/model/transformer.h"

namespace fs = std::filesystem;
using namespace qs;
using namespace qs::model;

namespace {

const fs::path kDemoDir = fs::path(QS_RESOURCES_DIR) / "demo";
const fs::path kRefDir = fs::path(QS_TEST_DATA_DIR) / "demo";

std::string readText(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

nlohmann::json readJson(const fs::path& p) { return nlohmann::json::parse(readText(p)); }

std::vector<TokenId> bytesOf(std::string_view text) {
    std::vector<TokenId> ids;
    for (char c : text) ids.push_back(static_cast<TokenId>(static_cast<unsigned char>(c)));
    return ids;
}

// Mean NLL per byte exactly as train-demo-model.py's held_out_nll(): consecutive windows of `window`
// tokens, each run without earlier context, predicting its tokens 1..n-1.
double meanNll(Transformer& model, const std::vector<TokenId>& ids, std::size_t window) {
    double total = 0.0;
    std::size_t count = 0;
    for (std::size_t start = 0; start + 1 < ids.size(); start += window) {
        const std::size_t n = std::min(window, ids.size() - start);
        if (n < 2) break;
        const std::vector<TokenId> chunk(ids.begin() + static_cast<std::ptrdiff_t>(start),
                                         ids.begin() + static_cast<std::ptrdiff_t>(start + n - 1));
        const MatrixF logits = model.forward(chunk);
        for (std::size_t t = 0; t + 1 < n; ++t) {
            const auto row = logits.row(static_cast<Eigen::Index>(t)).cast<double>();
            const double m = row.maxCoeff();
            const double lse = m + std::log((row.array() - m).exp().sum());
            total += lse - row(ids[start + t + 1]);
            ++count;
        }
    }
    return total / static_cast<double>(count);
}

// ---------------------------------------------------------------------------------------------
// Tokenizer

TEST(DemoModel, TokenizerEncodesTextToItsUtf8Bytes) {
    static constexpr char kWithNul[] = "nul\0byte\x01\x7F";
    const Tokenizer tok = Tokenizer::fromFile(kDemoDir);
    EXPECT_EQ(tok.vocabSize(), 257u);
    ASSERT_TRUE(tok.tokenToId("<|endoftext|>").has_value());
    EXPECT_EQ(*tok.tokenToId("<|endoftext|>"), 256);
    EXPECT_TRUE(tok.isSpecial(256));
    ASSERT_TRUE(tok.eosId().has_value());
    EXPECT_EQ(*tok.eosId(), 256);
    EXPECT_FALSE(tok.addsBosByDefault());
    // GPT-2's byte-to-unicode alphabet: printable ASCII stands for itself, space is Ġ, newline Ċ.
    EXPECT_EQ(tok.idToToken('a'), "a");
    EXPECT_EQ(tok.idToToken(' '), "\xC4\xA0");   // U+0120 Ġ
    EXPECT_EQ(tok.idToToken('\n'), "\xC4\x8A");  // U+010A Ċ
    EXPECT_EQ(tok.idToToken(0), "\xC4\x80");     // U+0100 Ā

    const std::vector<std::string> texts = {
        readText(kDemoDir / "calibration.txt"),
        readText(kDemoDir / "eval.txt"),
        "  leading spaces, 'quotes' it's  \t\ttabs\r\nCRLF 12345 \n\n",
        "na\xC3\xAFve caf\xC3\xA9 \xE2\x80\x94 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x99\x82",  // naïve café — 日本語 🙂
        std::string(kWithNul, sizeof kWithNul - 1),  // the NUL inside counts, the terminator does not
    };
    for (const std::string& text : texts) {
        ASSERT_FALSE(text.empty());
        const std::vector<TokenId> ids = tok.encode(text);
        EXPECT_EQ(ids, bytesOf(text)) << text.substr(0, 40);
        EXPECT_EQ(tok.decode(ids), text);
    }
    // The special token is recognised in text, and decodes back.
    const std::vector<TokenId> withEot = tok.encode("ab<|endoftext|>c");
    EXPECT_EQ(withEot, (std::vector<TokenId>{'a', 'b', 256, 'c'}));
    EXPECT_EQ(tok.decode(withEot), "ab<|endoftext|>c");
    EXPECT_EQ(tok.decode(withEot, DecodeOptions{.skipSpecial = true}), "abc");
}

// ---------------------------------------------------------------------------------------------
// Checkpoint layout

TEST(DemoModel, CheckpointIsAHuggingFaceQwen3InBf16) {
    const io::Checkpoint ckpt = io::Checkpoint::open(kDemoDir);
    const nlohmann::json& cfg = ckpt.config();
    EXPECT_EQ(cfg.at("architectures").at(0), "Qwen3ForCausalLM");
    EXPECT_EQ(cfg.at("model_type"), "qwen3");
    EXPECT_EQ(cfg.at("torch_dtype"), "bfloat16");
    EXPECT_TRUE(cfg.at("tie_word_embeddings").get<bool>());

    const ModelConfig c = ModelConfig::fromJson(cfg);
    EXPECT_EQ(c.numLayers, 2);
    EXPECT_EQ(c.hiddenSize, 256);
    EXPECT_EQ(c.intermediateSize, 768);
    EXPECT_EQ(c.numHeads, 4);
    EXPECT_EQ(c.numKvHeads, 2);
    EXPECT_EQ(c.headDim, 64);
    EXPECT_EQ(c.vocabSize, 320);
    EXPECT_EQ(c.maxPositionEmbeddings, 1024);
    EXPECT_DOUBLE_EQ(c.ropeTheta, 10000.0);
    EXPECT_DOUBLE_EQ(c.rmsNormEps, 1e-6);
    EXPECT_TRUE(c.qkNorm);
    EXPECT_TRUE(c.tieWordEmbeddings);
    EXPECT_FALSE(c.qkvBias);

    std::set<std::string> expected = {"model.embed_tokens.weight", "model.norm.weight"};
    for (int l = 0; l < 2; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        for (const char* m : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                              "self_attn.q_norm", "self_attn.k_norm", "input_layernorm", "post_attention_layernorm",
                              "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
            expected.insert(p + m + ".weight");
    }
    std::set<std::string> names;
    for (const auto& t : ckpt.tensors()) {
        names.insert(t.info->name);
        EXPECT_EQ(t.info->dtype, io::DType::BF16) << t.info->name;
    }
    EXPECT_EQ(names, expected);
    EXPECT_EQ(ckpt.tensor("model.embed_tokens.weight").shape(), (std::vector<std::int64_t>{320, 256}));
    EXPECT_EQ(ckpt.tensor("model.layers.1.self_attn.k_proj.weight").shape(), (std::vector<std::int64_t>{128, 256}));
    EXPECT_EQ(ckpt.tensor("model.layers.0.self_attn.q_norm.weight").shape(), (std::vector<std::int64_t>{64}));
    EXPECT_EQ(ckpt.tensor("model.layers.0.mlp.down_proj.weight").shape(), (std::vector<std::int64_t>{256, 768}));
    EXPECT_EQ(ckpt.summary().quantizationFormat, "dense");
    EXPECT_TRUE(ckpt.summary().hasTokenizer);
}

// ---------------------------------------------------------------------------------------------
// Forward pass

// Tolerance: absolute, on logits whose scale the test prints (they span about ±20 here). The
// reference is exact up to f32 storage (float64 forward pass on the same BF16 weights), so this
// bounds our f32 forward pass's error.
constexpr float kLogitTolerance = 1e-4f;

TEST(DemoModel, LogitsMatchTheTrainingScriptsReference) {
    const io::SafetensorsFile ref = io::SafetensorsFile::open(kRefDir / "reference_logits.safetensors");
    const MatrixF refLogits = ref.tensor("logits").toMatrix();
    const std::vector<float> refIdsF = ref.tensor("token_ids").toF32();
    const nlohmann::json meta = readJson(kRefDir / "reference.json");

    // The reference ids are the first bytes of eval.txt, and the demo tokenizer produces them.
    const Tokenizer tok = Tokenizer::fromFile(kDemoDir);
    const std::string eval = readText(kDemoDir / "eval.txt");
    const std::vector<TokenId> evalIds = tok.encode(eval);
    ASSERT_GE(evalIds.size(), refIdsF.size());
    const std::vector<TokenId> ids(evalIds.begin(), evalIds.begin() + static_cast<std::ptrdiff_t>(refIdsF.size()));
    for (std::size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(ids[i], static_cast<TokenId>(refIdsF[i])) << i;
    EXPECT_EQ(ids, meta.at("token_ids").get<std::vector<TokenId>>());

    Transformer model = Transformer::fromCheckpoint(io::Checkpoint::open(kDemoDir));
    const MatrixF logits = model.forward(ids);
    ASSERT_EQ(logits.rows(), refLogits.rows());
    ASSERT_EQ(logits.cols(), refLogits.cols());
    ASSERT_EQ(logits.cols(), 320);

    const float maxDiff = (logits - refLogits).cwiseAbs().maxCoeff();
    const float scale = refLogits.cwiseAbs().maxCoeff();
    std::cout << "demo logits: max |ours - reference| = " << maxDiff << " (largest |logit| " << scale << ")\n";
    EXPECT_GT(scale, 5.0f);  // a trained model, not an all-zero file
    EXPECT_LT(maxDiff, kLogitTolerance);

    const std::vector<int> refArgmax = meta.at("argmax").get<std::vector<int>>();
    for (Eigen::Index t = 0; t < logits.rows(); ++t) {
        Eigen::Index ours = 0, theirs = 0;
        logits.row(t).maxCoeff(&ours);
        refLogits.row(t).maxCoeff(&theirs);
        EXPECT_EQ(ours, theirs) << "position " << t;
        EXPECT_EQ(theirs, refArgmax[static_cast<std::size_t>(t)]) << "position " << t;
    }
}

TEST(DemoModel, HeldOutPerplexityMatchesTheTrainingScript) {
    const nlohmann::json meta = readJson(kRefDir / "reference.json");
    const Tokenizer tok = Tokenizer::fromFile(kDemoDir);
    const std::vector<TokenId> ids = tok.encode(readText(kDemoDir / "eval.txt"));
    Transformer model = Transformer::fromCheckpoint(io::Checkpoint::open(kDemoDir), {.keepAllLayers = true});
    const double ppl = std::exp(meanNll(model, ids, meta.at("eval_window").get<std::size_t>()));
    const double expected = meta.at("held_out_perplexity").get<double>();
    std::cout << "demo held-out perplexity: ours " << ppl << ", reference " << expected << "\n";
    EXPECT_NEAR(ppl, expected, 1e-4 * expected);
}

}  // namespace
