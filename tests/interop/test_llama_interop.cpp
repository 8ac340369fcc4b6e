// llama.cpp as the judge of QuantScope's GGUF support (ctest -L interop):
//  * our GGUF exports of the demo (Qwen3) and of stories260K (llama) load in llama.cpp without
//    warnings, tokenize as our tokenizers do, and give the next-token distributions our forward
//    pass gives on the same weights (mean KL < 1e-5);
//  * our reader decodes files written by llama.cpp's own quantizer (llama_model_quantize) exactly as
//    ggml's dequantize_row_* does, for every ggml type our traits decode, and refuses the others;
//  * ggml's own GGUF parser reads our files as our reader does.
// QS_INTEROP_VERBOSE=1 prints the KL of every position.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include <unistd.h>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/gguf_file.h"
#include "qs/model/gguf_tokenizer.h"
#include "qs/model/tokenizer.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/checkpoint_eval.h"
#include "qs/pipeline/decoded_weights.h"
#include "qs/pipeline/dense_export.h"
#include "qs/pipeline/gguf_export.h"
#include "qs/pipeline/gpt_oss_mxfp4_export.h"

#include "interop_test_support.h"
#include "llama_judge.h"
#include "llama_libraries.h"
#include "tiny_judge.h"

using namespace qs;
using nlohmann::json;

namespace {

namespace fs = std::filesystem;

using interop::compareDistributions, interop::KlFigures;
using interop::kDemo, interop::kStories, interop::kStoriesTokenizer;
const fs::path kTinyLlama = fs::path(QS_TEST_DATA_DIR) / "gguf" / "llama-2-tiny-random.gguf";

class Interop : public interop::JudgedTest {};

std::string readText(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

fs::path exportGguf(const fs::path& source, const fs::path& destination, io::GgmlType type, bool llama2cVocabulary) {
    pipeline::GgufExportOptions options;
    options.chooser = pipeline::uniformGgufType(type);
    if (llama2cVocabulary)
        options.sentencePiece =
            pipeline::GgufSentencePieceVocabulary{model::readLlama2cTokenizer(kStoriesTokenizer, 512), 1, 2, true};
    return pipeline::writeGguf(io::Checkpoint::open(source), destination, options, {}, CancelToken{});
}

// Runs the export through llama.cpp and through our forward pass on the same tokens.
KlFigures judgeExport(const fs::path& gguf, const std::vector<model::TokenId>& tokens, const std::string& text) {
    const io::Checkpoint checkpoint = io::Checkpoint::open(gguf);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(checkpoint);
    const json answer = interop::runLlamaJudge({{"model", gguf.string()},
                                                {"tokenize", {text}},
                                                {"evaluate", {tokens}},
                                                {"vocabulary", config.vocabSize},
                                                {"threads", 2}});
    EXPECT_EQ(interop::missingKeyWarnings(answer), std::vector<std::string>{}) << gguf;
    for (const auto& w : answer.at("warnings")) std::printf("llama.cpp warning: %s\n", w.get<std::string>().c_str());
    // llama.cpp tokenizes the text as our tokenizer from the same file does.
    const model::Tokenizer ours = model::Tokenizer::forCheckpoint(checkpoint);
    EXPECT_EQ(answer.at("tokens").at(0).get<std::vector<model::TokenId>>(), ours.encode(text)) << gguf;

    model::Transformer transformer = model::Transformer::fromCheckpoint(checkpoint);
    const MatrixF logits = transformer.forward(tokens);
    const KlFigures k = compareDistributions(answer.at("distributions").at(0), logits);
    std::printf("%s: mean KL(llama.cpp || QuantScope) = %.3g, max %.3g, same top token %zu/%zu\n",
                gguf.filename().c_str(), k.mean, k.max, k.sameTop, k.positions);
    return k;
}

std::vector<model::TokenId> demoTokens() {
    const auto ids = model::Tokenizer::fromFile(kDemo).encode(readText(kDemo / "eval.txt"));
    return {ids.begin(), ids.begin() + 256};
}

std::vector<model::TokenId> storyTokens() {
    const auto tokenizer =
        model::Tokenizer::fromSentencePiece(model::readLlama2cTokenizer(kStoriesTokenizer, 512), 1, 2, "tok512.bin");
    return tokenizer.encode(interop::kStory, {.addBos = true});
}

}  // namespace

TEST_F(Interop, DemoExportsRunInLlamaCppAsInQuantScope) {
    const std::vector<model::TokenId> tokens = demoTokens();
    const std::string text = readText(kDemo / "eval.txt").substr(0, 600);
    for (const auto type : {io::GgmlType::F32, io::GgmlType::F16}) {
        const fs::path file =
            exportGguf(kDemo, dir_ / ("demo-" + std::string(io::ggmlTypeTraits(type).name) + ".gguf"), type, false);
        const KlFigures k = judgeExport(file, tokens, text);
        EXPECT_EQ(k.positions, 256u);
        EXPECT_LT(k.mean, 1e-5) << io::ggmlTypeTraits(type).name;
        EXPECT_GE(k.sameTop, 250u);
    }
}

TEST_F(Interop, StoriesExportsRunInLlamaCppAsInQuantScope) {
    const std::vector<model::TokenId> tokens = storyTokens();
    ASSERT_GT(tokens.size(), 250u);
    for (const auto type : {io::GgmlType::F32, io::GgmlType::F16}) {
        const fs::path file = exportGguf(
            kStories, dir_ / ("stories-" + std::string(io::ggmlTypeTraits(type).name) + ".gguf"), type, true);
        const KlFigures k = judgeExport(file, tokens, interop::kStory);
        EXPECT_EQ(k.positions, tokens.size());
        EXPECT_LT(k.mean, 1e-5) << io::ggmlTypeTraits(type).name;
    }
}

namespace {

// A tiny random checkpoint of tests/data/<folder>/<name> exported as F32 GGUF: our forward pass on the
// Hugging Face checkpoint itself (not on the GGUF read back) against llama.cpp on the GGUF, the first 300
// tokens of the demo's eval text. `check` looks at the checkpoint's config before the run.
void expectTinyCheckpointRunsAsInLlamaCpp(const fs::path& dir, const char* folder, const char* name,
                                          const std::function<bool(const model::ModelConfig&)>& check) {
    SCOPED_TRACE(name);
    const auto ids = model::Tokenizer::fromFile(kDemo).encode(readText(kDemo / "eval.txt"));
    ASSERT_GT(ids.size(), 300u);
    const std::vector<model::TokenId> tokens(ids.begin(), ids.begin() + 300);
    const fs::path source = fs::path(QS_TEST_DATA_DIR) / folder / name;
    const fs::path gguf = exportGguf(source, dir / (std::string(name) + ".gguf"), io::GgmlType::F32, false);
    const json answer =
        interop::runLlamaJudge({{"model", gguf.string()}, {"evaluate", {tokens}}, {"vocabulary", 320}, {"threads", 2}});
    EXPECT_EQ(interop::missingKeyWarnings(answer), std::vector<std::string>{});
    for (const auto& w : answer.at("warnings")) std::printf("llama.cpp warning: %s\n", w.get<std::string>().c_str());
    model::Transformer transformer = model::Transformer::fromCheckpoint(io::Checkpoint::open(source));
    ASSERT_TRUE(check(transformer.config()));
    const KlFigures k = compareDistributions(answer.at("distributions").at(0), transformer.forward(tokens));
    std::printf("%s: mean KL(llama.cpp || QuantScope) = %.3g, max %.3g, same top token %zu/%zu\n", name, k.mean, k.max,
                k.sameTop, k.positions);
    EXPECT_EQ(k.positions, 300u);
    EXPECT_LT(k.mean, 1e-5);
    EXPECT_GE(k.sameTop, 295u);
}

}  // namespace

// The tiny random MoE checkpoints (scripts/make-tiny-moe.py): llama.cpp runs qwen3_moe as its qwen3moe
// and mixtral as llama with experts; the Qwen3-MoE twin whose experts transformers 5 fused is read (and
// written to GGUF) per expert.
TEST_F(Interop, MoeExportsRunInLlamaCppAsTheCheckpointRunsInQuantScope) {
    for (const char* name : {"qwen3-moe-tiny", "mixtral-tiny", "qwen3-moe-tiny-fused"})
        expectTinyCheckpointRunsAsInLlamaCpp(dir_, "moe", name, [](const model::ModelConfig& c) { return c.isMoe(); });
}

// The tiny random Gemma 3 checkpoints (scripts/make-tiny-gemma3.py), with llama.cpp's gemma3
// architecture: the (1 + w) norms stored as llama.cpp multiplies, the output norms as
// post_attention_norm / post_ffw_norm, five sliding layers (window 16, RoPE base 10000) and a global
// one (rope_theta; the VLM's with linear scaling 8). 300 positions reach far past the window; the VLM's
// text tower is read under model.language_model.
TEST_F(Interop, Gemma3ExportsRunInLlamaCppAsTheCheckpointRunsInQuantScope) {
    for (const char* name : {"gemma3-text-tiny", "gemma3-vlm-tiny"})
        expectTinyCheckpointRunsAsInLlamaCpp(dir_, "gemma3", name,
                                             [](const model::ModelConfig& c) { return c.arch.normOffset == 1.0f; });
}

// The tiny random Phi-3 checkpoints (scripts/make-tiny-phi3.py) with llama.cpp's phi3: attn_qkv and the
// fused ffn_up (gate, then up) written as the checkpoint stores them. tiny-random-longrope: partial rotary
// (12 of 16) and LongRoPE with its original context of 256: 300 positions are beyond it, where both
// transformers (the call reaches past it) and llama.cpp (its context of 364 does) take the long factors,
// and both scale cos and sin by the attention factor. The window (2047, 262144) is beyond 300 positions.
TEST_F(Interop, Phi3ExportsRunInLlamaCppAsTheCheckpointRunsInQuantScope) {
    expectTinyCheckpointRunsAsInLlamaCpp(dir_, "phi3", "tiny-random",
                                         [](const model::ModelConfig& c) { return !c.arch.fusedQkv.empty(); });
    expectTinyCheckpointRunsAsInLlamaCpp(dir_, "phi3", "tiny-random-longrope", [](const model::ModelConfig& c) {
        return c.ropeScaling.type == model::RopeScalingType::LongRope && c.rotaryDims() == 12;
    });
}

// The tiny random gpt-oss (scripts/make-tiny-gptoss.py) as llama.cpp's gpt-oss runs it: biased attention
// with per-head sinks, even layers sliding (window 32, crossed many times by 300 positions) and odd ones
// full, YaRN (truncate true: where llama.cpp's rounding of the correction range is transformers' too),
// the biased router's softmax over the top 2, and the clamped SwiGLU of the experts, whose interleaved
// gate_up_proj the export splits into ffn_gate_exps / ffn_up_exps.
TEST_F(Interop, GptOssExportRunsInLlamaCppAsTheCheckpointRunsInQuantScope) {
    expectTinyCheckpointRunsAsInLlamaCpp(dir_, "gptoss", "gptoss-tiny", [](const model::ModelConfig& c) {
        return c.arch.attentionSinks && c.ropeScaling.type == model::RopeScalingType::Yarn && c.moe.stackedExperts;
    });
}

// The tiny gpt-oss quantized back to gpt-oss's own MXFP4 layout (exportGptOssMxfp4): its GGUF is written
// from the expert blocks themselves (decoded by the MXFP4 codec, split into gate / up), and llama.cpp runs
// it as our forward pass runs the same checkpoint dequantized (MXFP4 values are exact in F32).
TEST_F(Interop, GptOssMxfp4ExpertsExportFromTheirBlocksAndRunInLlamaCppAsDequantized) {
    const fs::path source = fs::path(QS_TEST_DATA_DIR) / "gptoss" / "gptoss-tiny";
    const fs::path mxfp4 = dir_ / "gptoss-mxfp4", dense = dir_ / "gptoss-mxfp4-dense";
    (void)pipeline::exportGptOssMxfp4({source, mxfp4}, {}, CancelToken{});
    ASSERT_NE(io::Checkpoint::open(mxfp4).find("model.layers.0.mlp.experts.gate_up_proj_blocks"), nullptr);
    (void)pipeline::exportDense({mxfp4, dense, io::DType::F32}, {}, CancelToken{});
    const fs::path gguf = exportGguf(mxfp4, dir_ / "gptoss-mxfp4.gguf", io::GgmlType::F32, false);

    const auto ids = model::Tokenizer::fromFile(kDemo).encode(readText(kDemo / "eval.txt"));
    const std::vector<model::TokenId> tokens(ids.begin(), ids.begin() + 300);
    const json answer =
        interop::runLlamaJudge({{"model", gguf.string()}, {"evaluate", {tokens}}, {"vocabulary", 320}, {"threads", 2}});
    EXPECT_EQ(interop::missingKeyWarnings(answer), std::vector<std::string>{});
    const MatrixF dequantized = model::Transformer::fromCheckpoint(io::Checkpoint::open(dense)).forward(tokens);
    const KlFigures k = compareDistributions(answer.at("distributions").at(0), dequantized);
    std::printf(
        "gptoss-tiny MXFP4: mean KL(llama.cpp || QuantScope dequantized) = %.3g, max %.3g, same top token %zu/%zu\n",
        k.mean, k.max, k.sameTop, k.positions);
    EXPECT_LT(k.mean, 1e-5);
    // Our forward pass on the MXFP4 checkpoint itself (its experts decoded where the model reads them).
    const io::Checkpoint released = io::Checkpoint::open(mxfp4);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(released);
    model::Transformer direct(config, std::make_shared<pipeline::DecodedWeights>(released, config));
    const KlFigures d = compareDistributions(answer.at("distributions").at(0), direct.forward(tokens));
    std::printf("gptoss-tiny MXFP4 read directly: mean KL(llama.cpp || QuantScope) = %.3g\n", d.mean);
    EXPECT_LT(d.mean, 1e-5);
    // The MXFP4 round trip did change the model: the original's distributions are measurably elsewhere.
    const MatrixF original = model::Transformer::fromCheckpoint(io::Checkpoint::open(source)).forward(tokens);
    EXPECT_GT(compareDistributions(answer.at("distributions").at(0), original).mean, 1e-4);
}

// A gpt-oss GGUF read back by QuantScope (each expert's gate and up apart, with their biases) runs as
// llama.cpp runs the same file: in F32, and with the experts in ggml's MXFP4 as ggml-org ships gpt-oss
// (biases, router and the rest F32). For its MXFP4 products llama.cpp rounds the activations to Q8_0,
// which our forward pass does not (this random model is sharp: Q8_0 weights alone cost it a KL of 0.06),
// so there the bar is relative: our reading of the MXFP4 file must explain llama.cpp's output far better
// than the F32 model it was made from does.
TEST_F(Interop, GptOssGgufsReadBackRunAsLlamaCppRunsThem) {
    const fs::path source = fs::path(QS_TEST_DATA_DIR) / "gptoss" / "gptoss-tiny";
    const std::string text = readText(kDemo / "eval.txt");
    const auto ids = model::Tokenizer::fromFile(kDemo).encode(text);
    const std::vector<model::TokenId> tokens(ids.begin(), ids.begin() + 300);
    const KlFigures f32 = judgeExport(exportGguf(source, dir_ / "gptoss-f32.gguf", io::GgmlType::F32, false), tokens,
                                      text.substr(0, 200));
    EXPECT_LT(f32.mean, 1e-5);

    pipeline::GgufExportOptions options;
    options.chooser = [](const pipeline::GgufTensorChoice& t) {
        return t.ggufName.ends_with("_exps.weight") ? io::GgmlType::MXFP4 : io::GgmlType::F32;
    };
    const fs::path mxfp4 = pipeline::writeGguf(io::Checkpoint::open(source), dir_ / "gptoss-mxfp4-experts.gguf",
                                               options, {}, CancelToken{});
    ASSERT_EQ(*io::GgufFile::open(mxfp4).find("blk.0.ffn_up_exps.weight")->ggmlType, io::GgmlType::MXFP4);
    const json answer = interop::runLlamaJudge(
        {{"model", mxfp4.string()}, {"evaluate", {tokens}}, {"vocabulary", 320}, {"threads", 2}});
    const KlFigures read =
        compareDistributions(answer.at("distributions").at(0),
                             model::Transformer::fromCheckpoint(io::Checkpoint::open(mxfp4)).forward(tokens));
    const KlFigures original =
        compareDistributions(answer.at("distributions").at(0),
                             model::Transformer::fromCheckpoint(io::Checkpoint::open(source)).forward(tokens));
    std::printf(
        "gptoss MXFP4 experts: mean KL(llama.cpp || QuantScope on the file) = %.3g (same top %zu/%zu), "
        "|| the F32 original = %.3g (same top %zu)\n",
        read.mean, read.sameTop, read.positions, original.mean, original.sameTop);
    EXPECT_LT(read.mean * 20.0, original.mean);  // measured: 0.0095 against 1.48
    EXPECT_GT(read.sameTop, original.sameTop);
}

// The tiny random VLMs (scripts/make-tiny-vlm.py): their text towers exported as llama.cpp's converter
// writes them, Qwen2.5-VL as qwen2vl and Qwen3-VL as qwen3vl (the text model's tensors with
// rope.dimension_sections, which llama.cpp's M-RoPE applies to text tokens whose positions are
// equal, and Qwen3-VL's deepstack count), Mistral 3 as llama; both tensor layouts of each.
TEST_F(Interop, VlmTextTowersRunInLlamaCppAsTheCheckpointRunsInQuantScope) {
    for (const char* name : {"qwen2_5-vl-tiny", "qwen2_5-vl-old-tiny", "qwen3-vl-tiny"})
        expectTinyCheckpointRunsAsInLlamaCpp(dir_, "vlm", name,
                                             [](const model::ModelConfig& c) { return c.mropeSection.size() == 3; });
    for (const char* name : {"mistral3-tiny", "mistral3-old-tiny"})
        expectTinyCheckpointRunsAsInLlamaCpp(dir_, "vlm", name,
                                             [](const model::ModelConfig& c) { return c.modelType == "mistral3"; });
}

TEST_F(Interop, TheTinyLlamaFileTokenizesAsLlamaCppTokenizesIt) {
    // The llama.cpp test strings, through llama.cpp's own tokenizer of the file and through ours.
    const std::string inputs = readText(fs::path(QS_TEST_DATA_DIR) / "tokenizers" / "llama.cpp-test-vectors" /
                                        "ggml-vocab-llama-spm.gguf.inp");
    std::vector<std::string> texts;
    const std::string separator = "\n__ggml_vocab_test__\n";
    for (std::size_t at = 0; at <= inputs.size();) {
        const auto next = inputs.find(separator, at);
        texts.push_back(inputs.substr(at, next == std::string::npos ? std::string::npos : next - at));
        if (next == std::string::npos) break;
        at = next + separator.size();
    }
    texts.push_back(interop::kStory);
    const json answer =
        interop::runLlamaJudge({{"model", kTinyLlama.string()}, {"tokenize", texts}, {"vocabulary", 32000}});
    const model::Tokenizer ours = model::Tokenizer::forCheckpoint(io::Checkpoint::open(kTinyLlama));
    std::size_t same = 0;
    for (std::size_t i = 0; i < texts.size(); ++i) {
        const auto theirs = answer.at("tokens").at(i).get<std::vector<model::TokenId>>();
        if (theirs == ours.encode(texts[i]))
            ++same;
        else
            ADD_FAILURE() << "text " << i << " '" << texts[i] << "': llama.cpp " << ::testing::PrintToString(theirs)
                          << ", ours " << ::testing::PrintToString(ours.encode(texts[i]));
    }
    std::printf("llama-2-tiny-random.gguf: %zu/%zu texts tokenized as llama.cpp does\n", same, texts.size());
}

TEST_F(Interop, LlamaCppsQuantizedFilesDecodeAsGgmlDecodesThem) {
    const fs::path f32 = exportGguf(kDemo, dir_ / "demo-f32.gguf", io::GgmlType::F32, false);
    const interop::LlamaQuantizer quantizer;
    const interop::GgmlBase ggml;
    const std::map<int, std::string> fileTypes = {{7, "Q8_0"}, {15, "Q4_K_M"}, {18, "Q6_K"}, {30, "IQ4_XS"}};
    for (const auto& [fileType, name] : fileTypes) {
        const fs::path file = dir_ / ("demo-" + name + ".gguf");
        quantizer.quantize(f32, file, fileType, 2);
        const io::GgufFile gguf = io::GgufFile::open(file);
        EXPECT_EQ(gguf.metadata().integer("general.file_type"), fileType);
        std::map<std::string, int> compared, refused;
        for (const io::TensorInfo& t : gguf.tensors()) {
            const io::GgmlType type = *t.ggmlType;
            const auto& traits = io::ggmlTypeTraits(type);
            const std::string typeName(traits.name);
            if (!traits.decodes) {
                // Not decoded yet by QuantScope: refused with one line naming the type, never guessed.
                EXPECT_THAT([&] { (void)gguf.view(t).toF32(); },
                            testing::ThrowsMessage<Error>(testing::HasSubstr("ggml type " + typeName)));
                ++refused[typeName];
                continue;
            }
            const std::vector<float> ours = gguf.view(t).toF32();
            const std::int64_t n = t.shape.back();
            const std::size_t rowBytes = io::ggmlRowBytes(type, n);
            std::vector<float> theirs(ours.size());
            const auto* bytes = reinterpret_cast<const std::uint8_t*>(gguf.view(t).bytes().data());
            if (type == io::GgmlType::F32) {
                std::memcpy(theirs.data(), bytes, ours.size() * sizeof(float));  // ggml reads f32 as it is stored
            } else {
                for (std::size_t r = 0; r * static_cast<std::size_t>(n) < ours.size(); ++r)
                    ggml.toFloat(static_cast<int>(type), bytes + r * rowBytes,
                                 theirs.data() + r * static_cast<std::size_t>(n), n);
            }
            EXPECT_EQ(std::memcmp(ours.data(), theirs.data(), ours.size() * sizeof(float)), 0)
                << name << " " << t.name << " " << typeName;
            ++compared[typeName];
        }
        std::string summary;
        for (const auto& [type, count] : compared) summary += " " + type + " x" + std::to_string(count);
        for (const auto& [type, count] : refused)
            summary += " (" + type + " x" + std::to_string(count) + " not decoded yet)";
        std::printf("llama.cpp %s: compared with ggml:%s\n", name.c_str(), summary.c_str());
        // Every type llama.cpp chose for these files is one QuantScope decodes, and each file's main
        // type is compared on the linears at least (14 in the demo).
        EXPECT_TRUE(refused.empty()) << name;
        const std::map<std::string, std::string> mainType = {
            {"Q8_0", "q8_0"}, {"Q4_K_M", "q4_K"}, {"Q6_K", "q6_K"}, {"IQ4_XS", "iq4_xs"}};
        EXPECT_GE(compared[mainType.at(name)], name == "Q8_0" ? 14 : 1) << name;
    }
    // And the whole path: our evaluation of llama.cpp's Q8_0 file against the original demo.
    const fs::path q8 = dir_ / "demo-Q8_0.gguf";
    const io::Checkpoint demo = io::Checkpoint::open(kDemo), quantized = io::Checkpoint::open(q8);
    pipeline::CheckpointEvalPlan plan{
        kDemo, q8,
        pipeline::sharedTokenWindows(demo, quantized, pipeline::loadTexts(kDemo / "eval.txt"), 4, 128, "eval.txt")};
    const pipeline::CheckpointEvalResult r = pipeline::evaluateCheckpoints(plan, {}, CancelToken{});
    std::printf("mean KL of llama.cpp's Q8_0 demo against the original: %.3g (top-1 agreement %.4f)\n",
                r.kl.meanKld.value, r.kl.sameTop.value);
    EXPECT_GT(r.kl.meanKld.value, 0.0);
    EXPECT_LT(r.kl.meanKld.value, 1e-3);
    EXPECT_EQ(r.quantizedFormat, "gguf (Q8_0)");
}

TEST_F(Interop, GgmlParsesOurFilesAsOurReaderDoes) {
    const interop::GgmlBase ggml;
    const std::vector<fs::path> files = {exportGguf(kDemo, dir_ / "demo.gguf", io::GgmlType::F32, false),
                                         exportGguf(kStories, dir_ / "stories-q8.gguf", io::GgmlType::Q8_0, true),
                                         kTinyLlama};
    for (const fs::path& path : files) {
        const io::GgufFile ours = io::GgufFile::open(path);
        const interop::GgmlGgufView theirs = ggml.readGguf(path);
        EXPECT_EQ(theirs.version, ours.header().version) << path;
        EXPECT_EQ(theirs.alignment, ours.header().alignment) << path;
        EXPECT_EQ(theirs.dataOffset, ours.header().dataOffset) << path;
        ASSERT_EQ(theirs.keys.size(), ours.metadata().size()) << path;
        for (std::size_t i = 0; i < theirs.keys.size(); ++i) {
            EXPECT_EQ(theirs.keys[i], ours.metadata().entries()[i].first) << path;
            EXPECT_EQ(theirs.keyTypes[i], static_cast<int>(ours.metadata().entries()[i].second.type()))
                << theirs.keys[i];
        }
        ASSERT_EQ(theirs.tensors.size(), ours.tensors().size()) << path;
        for (std::size_t i = 0; i < theirs.tensors.size(); ++i) {
            const auto& t = theirs.tensors[i];
            const io::TensorInfo& o = ours.tensors()[i];
            EXPECT_EQ(t.name, o.name);
            EXPECT_EQ(t.type, static_cast<int>(*o.ggmlType)) << t.name;
            EXPECT_EQ(t.offset, o.begin) << t.name;
            EXPECT_EQ(t.size, o.byteSize()) << t.name;
            for (std::size_t d = 0; d < 4; ++d)
                EXPECT_EQ(t.ne[d], d < o.shape.size() ? o.shape[o.shape.size() - 1 - d] : 1) << t.name << " dim " << d;
        }
    }
}
