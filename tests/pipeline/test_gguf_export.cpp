// GGUF export (pipeline::writeGguf) of the bundled demo (Qwen3, byte-level tokenizer) and of
// stories260K (llama, llama2.c's SentencePiece vocabulary), read back through the GGUF reader and
// Checkpoint: exact weights, llama.cpp's q/k row order in the file, the metadata llama.cpp reads,
// Q8_0 as ggml's own blocks, refusals that write nothing; and dense export of a GGUF.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <tuple>

#include "qs/error.h"
#include "qs/formats/config_check.h"
#include "qs/formats/detect.h"
#include "qs/io/checkpoint.h"
#include "qs/io/gguf_file.h"
#include "qs/io/gguf_writer.h"
#include "qs/model/checkpoint_weights.h"
#include "qs/model/gguf_tokenizer.h"
#include "qs/model/model_config.h"
#include "qs/model/tokenizer.h"
#include "qs/pipeline/checkpoint_eval.h"
#include "qs/pipeline/dense_export.h"
#include "qs/pipeline/gguf_export.h"
#include "qs/pipeline/model_checkpoint.h"
#include "qs/quant/ggml_encode.h"

#include "gguf_test_reference.h"
#include "io_test_util.h"
#include "same_model_config.h"

using namespace qs;
using namespace qs::pipeline;
using qs::io::test::converterPermute;
using qs::io::test::TempDir;
using testing::AllOf;
using testing::HasSubstr;

namespace {

namespace fs = std::filesystem;

const fs::path kDemo = fs::path(QS_RESOURCES_DIR) / "demo";
const fs::path kStories = fs::path(QS_RESOURCES_DIR) / "models" / "stories260K";
const fs::path kStoriesTokenizer = fs::path(QS_TEST_DATA_DIR) / "stories260K" / "tok512.bin";

fs::path exportDemo(const fs::path& destination, io::GgmlType type) {
    GgufExportOptions options;
    options.chooser = uniformGgufType(type);
    return writeGguf(io::Checkpoint::open(kDemo), destination, options, {}, CancelToken{});
}

GgufExportOptions storiesOptions(io::GgmlType type) {
    GgufExportOptions options;
    options.chooser = uniformGgufType(type);
    options.sentencePiece =
        GgufSentencePieceVocabulary{model::readLlama2cTokenizer(kStoriesTokenizer, 512), 1, 2, true};
    return options;
}

// A copy of a GGUF with the metadata value `key` replaced (when `value` is set) and, when
// `nanTensor` names an F32 tensor, its first value made NaN.
fs::path editedCopy(const fs::path& from, const fs::path& to, const std::string& key,
                    const std::optional<io::GgufValue>& value, const std::string& nanTensor) {
    const io::GgufFile source = io::GgufFile::open(from);
    io::GgufWriter w(to);
    for (const auto& [k, v] : source.metadata().entries()) w.set(k, k == key && value ? *value : v);
    for (const auto& t : source.tensors()) {
        const auto bytes = source.view(t).bytes();
        std::vector<std::byte> copy(bytes.begin(), bytes.end());
        if (t.name == nanTensor) {
            const float nan = std::numeric_limits<float>::quiet_NaN();
            std::memcpy(copy.data(), &nan, sizeof nan);
        }
        w.addTensor(t.name, *t.ggmlType, t.shape, copy);
    }
    return w.finish();
}

std::string readText(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST(GgufExport, DemoInF32ReadsBackExactlyWithItsConfigAndTokenizer) {
    TempDir dir;
    const fs::path file = exportDemo(dir / "demo.gguf", io::GgmlType::F32);
    const io::Checkpoint demo = io::Checkpoint::open(kDemo);
    const io::Checkpoint gguf = io::Checkpoint::open(file);
    ASSERT_EQ(gguf.tensors().size(), demo.tensors().size());  // tied: no lm_head in either
    for (const auto& t : demo.tensors()) {
        ASSERT_NE(gguf.find(t.info->name), nullptr) << t.info->name;
        EXPECT_EQ(gguf.tensor(t.info->name).toF32(), demo.tensor(t.info->name).toF32())
            << t.info->name;  // BF16 -> F32 is exact
        EXPECT_EQ(gguf.tensor(t.info->name).info().typeName(), "f32");
    }
    const model::ModelConfig a = model::ModelConfig::fromCheckpoint(demo), b = model::ModelConfig::fromCheckpoint(gguf);
    EXPECT_EQ(b.modelType, "qwen3");
    test::expectSameModelConfig(a, b);

    // The keys llama.cpp's loader reads, with the types it reads them as.
    const io::GgufMetadata& m = gguf.gguf()->metadata();
    for (const char* key : {"qwen3.context_length", "qwen3.embedding_length", "qwen3.block_count",
                            "qwen3.feed_forward_length", "qwen3.attention.head_count", "qwen3.attention.head_count_kv",
                            "qwen3.attention.key_length", "general.file_type", "tokenizer.ggml.eos_token_id"})
        EXPECT_EQ(m.find(key)->type(), io::GgufValueType::U32) << key;
    for (const char* key : {"qwen3.attention.layer_norm_rms_epsilon", "qwen3.rope.freq_base"})
        EXPECT_EQ(m.find(key)->type(), io::GgufValueType::F32) << key;
    EXPECT_EQ(*m.string("general.architecture"), "qwen3");
    EXPECT_EQ(m.integer("general.file_type"), 0);
    EXPECT_EQ(*m.string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(*m.string("tokenizer.ggml.pre"), "gpt-2");
    EXPECT_EQ(m.array("tokenizer.ggml.tokens")->items.size(), 320u);
    EXPECT_EQ(m.integer("tokenizer.ggml.eos_token_id"), 256);
    EXPECT_FALSE(m.contains("general.quantization_version"));

    const std::string text = readText(kDemo / "eval.txt");
    EXPECT_EQ(model::Tokenizer::forCheckpoint(gguf).encode(text), model::Tokenizer::forCheckpoint(demo).encode(text));
}

TEST(GgufExport, StoriesStoresQkInLlamaCppsOrderAndLoadsBackIntoTheSameModel) {
    TempDir dir;
    const io::Checkpoint stories = io::Checkpoint::open(kStories);
    const fs::path file =
        writeGguf(stories, dir / "stories.gguf", storiesOptions(io::GgmlType::F32), {}, CancelToken{});
    const io::GgufFile raw = io::GgufFile::open(file);
    EXPECT_EQ(*raw.metadata().string("general.architecture"), "llama");
    EXPECT_EQ(raw.metadata().integer("llama.rope.dimension_count"), 8);
    EXPECT_EQ(raw.metadata().integer("llama.vocab_size"), 512);
    EXPECT_EQ(*raw.metadata().string("tokenizer.ggml.model"), "llama");
    for (int layer = 0; layer < 5; ++layer) {
        const std::string hf = "model.layers." + std::to_string(layer) + ".self_attn.";
        const std::string gg = "blk." + std::to_string(layer) + ".attn_";
        EXPECT_EQ(raw.tensor(gg + "q.weight").toF32(),
                  converterPermute(stories.tensor(hf + "q_proj.weight").toF32(), 64, 64, 8));
        EXPECT_EQ(raw.tensor(gg + "k.weight").toF32(),
                  converterPermute(stories.tensor(hf + "k_proj.weight").toF32(), 32, 64, 4));
        EXPECT_EQ(raw.tensor(gg + "v.weight").toF32(), stories.tensor(hf + "v_proj.weight").toF32());
    }
    // Read back, the model is the same model: every weight the loader reads is equal.
    const io::Checkpoint gguf = io::Checkpoint::open(file);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(gguf);
    const model::CheckpointWeights original(stories, model::ModelConfig::fromCheckpoint(stories)), back(gguf, config);
    for (int layer = 0; layer < config.numLayers; ++layer) {
        const auto x = original.layer(layer), y = back.layer(layer);
        for (const auto module : model::LayerWeights::kLinearModules)
            EXPECT_EQ(x.linear(module).weight, y.linear(module).weight) << layer << " " << module;
        EXPECT_EQ(x.inputNorm, y.inputNorm);
        EXPECT_EQ(x.postAttentionNorm, y.postAttentionNorm);
    }
    const std::vector<model::TokenId> tokens = {1, 400, 17, 311};
    EXPECT_EQ(original.embeddingRows(tokens), back.embeddingRows(tokens));
    EXPECT_EQ(original.finalNorm(), back.finalNorm());
}

TEST(GgufExport, Q8ZeroMatricesAreGgmlBlocksAndRowsThatDoNotFitStayF16) {
    TempDir dir;
    const io::Checkpoint stories = io::Checkpoint::open(kStories);
    const fs::path file = writeGguf(stories, dir / "q8.gguf", storiesOptions(io::GgmlType::Q8_0), {}, CancelToken{});
    const io::GgufFile raw = io::GgufFile::open(file);
    EXPECT_EQ(raw.find("blk.0.ffn_gate.weight")->ggmlType, io::GgmlType::Q8_0);
    EXPECT_EQ(raw.find("blk.0.ffn_down.weight")->ggmlType, io::GgmlType::F16);  // rows of 172: not whole blocks of 32
    EXPECT_EQ(raw.find("blk.0.attn_norm.weight")->ggmlType, io::GgmlType::F32);
    EXPECT_EQ(raw.find("token_embd.weight")->ggmlType, io::GgmlType::Q8_0);
    EXPECT_EQ(raw.metadata().integer("general.file_type"), 7);
    EXPECT_EQ(raw.metadata().integer("general.quantization_version"), 2);

    // The gate's stored bytes are ggml's Q8_0 of the original rows, and the checkpoint decodes them.
    const std::vector<float> gate = stories.tensor("model.layers.0.mlp.gate_proj.weight").toF32();
    const io::TensorView stored = raw.tensor("blk.0.ffn_gate.weight");
    const std::size_t rowBytes = io::ggmlRowBytes(io::GgmlType::Q8_0, 64);
    std::vector<std::uint8_t> expected(rowBytes * 172);
    for (std::size_t r = 0; r < 172; ++r)
        qs::quant::ggmlEncodeRow(io::GgmlType::Q8_0, gate.data() + r * 64, expected.data() + r * rowBytes, 64);
    ASSERT_EQ(stored.bytes().size(), expected.size());
    EXPECT_EQ(std::memcmp(stored.bytes().data(), expected.data(), expected.size()), 0);
    const std::vector<float> decoded = io::Checkpoint::open(file).tensor("model.layers.0.mlp.gate_proj.weight").toF32();
    double maxError = 0.0;
    for (std::size_t i = 0; i < gate.size(); ++i) maxError = std::max(maxError, double(std::abs(decoded[i] - gate[i])));
    EXPECT_GT(maxError, 0.0);
    EXPECT_LT(maxError, 0.02);
}

TEST(GgufExport, RefusesATypeThatCannotHoldATensorHavingWrittenNothing) {
    TempDir dir;
    GgufExportOptions options = storiesOptions(io::GgmlType::Q8_0);
    options.chooser = [](const GgufTensorChoice&) { return io::GgmlType::Q8_0; };
    EXPECT_THAT([&] { writeGguf(io::Checkpoint::open(kStories), dir / "x.gguf", options, {}, CancelToken{}); },
                testing::ThrowsMessage<Error>(AllOf(HasSubstr("model.layers.0.mlp.down_proj.weight"),
                                                    HasSubstr("cannot be stored as q8_0"),
                                                    HasSubstr("rows of 172 are not whole blocks of 32"))));
    EXPECT_TRUE(fs::is_empty(dir.path()));
    // Without tokenizer.json and without a vocabulary there is no tokenizer to store.
    EXPECT_THAT(
        [&] { writeGguf(io::Checkpoint::open(kStories), dir / "y.gguf", GgufExportOptions{}, {}, CancelToken{}); },
        testing::ThrowsMessage<Error>(HasSubstr("has no tokenizer.json")));
    EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(GgufExport, F16AndBf16HoldTheRoundedWeights) {
    TempDir dir;
    for (const auto type : {io::GgmlType::F16, io::GgmlType::BF16}) {
        const fs::path file = exportDemo(dir / (std::string(io::ggmlTypeTraits(type).name) + ".gguf"), type);
        const io::Checkpoint gguf = io::Checkpoint::open(file);
        const std::vector<float> original =
            io::Checkpoint::open(kDemo).tensor("model.layers.1.mlp.up_proj.weight").toF32();
        const std::vector<float> back = gguf.tensor("model.layers.1.mlp.up_proj.weight").toF32();
        std::vector<float> expected(original.size());
        std::vector<std::uint16_t> bits(original.size());
        const io::DType dtype = type == io::GgmlType::F16 ? io::DType::F16 : io::DType::BF16;
        io::convertFromF32(dtype, original.data(), original.size(), reinterpret_cast<std::byte*>(bits.data()));
        io::convertToF32(dtype, reinterpret_cast<const std::byte*>(bits.data()), bits.size(), expected.data());
        EXPECT_EQ(back, expected) << io::ggmlTypeTraits(type).name;
        EXPECT_EQ(gguf.tensor("model.norm.weight").info().typeName(), "f32");
    }
}

TEST(GgufExport, DemoAgainstItsF32GgufIsExactlyZeroKl) {
    TempDir dir;
    const fs::path file = exportDemo(dir / "demo.gguf", io::GgmlType::F32);
    const io::Checkpoint demo = io::Checkpoint::open(kDemo), gguf = io::Checkpoint::open(file);
    CheckpointEvalPlan plan{kDemo, file,
                            sharedTokenWindows(demo, gguf, loadTexts(kDemo / "eval.txt"), 4, 128, "eval.txt")};
    const CheckpointEvalResult r = evaluateCheckpoints(plan, {}, CancelToken{});
    EXPECT_EQ(r.kl.count, 4u * 127u);
    EXPECT_EQ(r.kl.meanKld.value, 0.0);
    EXPECT_EQ(r.kl.kld.maximum, 0.0);
    EXPECT_EQ(r.quantizedFormat, "gguf (F32)");
}

TEST(GgufExport, DenseExportOfAGgufIsAHuggingFaceCheckpoint) {
    TempDir dir;
    const fs::path gguf = writeGguf(io::Checkpoint::open(kStories), dir / "stories.gguf",
                                    storiesOptions(io::GgmlType::Q8_0), {}, CancelToken{});
    // A folder beside the GGUF is fine; one that holds it, which overwriting would delete, is not.
    EXPECT_THAT(
        [&] {
            exportDense({gguf, dir.path(), io::DType::F32, true}, {}, CancelToken{});
        },
        testing::ThrowsMessage<Error>(HasSubstr("holds the source")));
    ASSERT_TRUE(fs::exists(gguf));
    const fs::path out = exportDense({gguf, dir / "dense", io::DType::F32, false}, {}, CancelToken{});
    const io::Checkpoint dense = io::Checkpoint::open(out), source = io::Checkpoint::open(gguf);
    EXPECT_EQ(dense.gguf(), nullptr);
    EXPECT_EQ(dense.tensors().size(), source.tensors().size());
    for (const auto& t : source.tensors())
        EXPECT_EQ(dense.tensor(t.info->name).toF32(), source.tensor(t.info->name).toF32()) << t.info->name;
    EXPECT_EQ(dense.tensor("model.norm.weight").dtype(), io::DType::F32);
    EXPECT_EQ(dense.config()["model_type"], "llama");
    EXPECT_EQ(dense.config()["torch_dtype"], "float32");
    EXPECT_FALSE(dense.config().contains("quantization_config"));
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(dense);
    EXPECT_EQ(config.numKvHeads, 4);
    // Its tokenizer.json is the GGUF's SentencePiece vocabulary and tokenizes as the GGUF does.
    const model::Tokenizer fromJson = model::Tokenizer::fromFile(out),
                           fromGguf = model::Tokenizer::forCheckpoint(source);
    const std::string text = "Once upon a time, there was a little girl named Lily. She liked to play outside.";
    EXPECT_EQ(fromJson.encode(text), fromGguf.encode(text));
    EXPECT_EQ(fromJson.bosId(), std::optional<model::TokenId>(1));
    EXPECT_TRUE(fromJson.addsBosByDefault());
}

TEST(GgufExport, AGgufIsCheckedAsAModelInputLikeAnyCheckpoint) {
    TempDir dir;
    const fs::path file = exportDemo(dir / "demo.gguf", io::GgmlType::F32);
    // The config synthesized from its metadata describes its tensors.
    const io::Checkpoint gguf = openModelCheckpoint(file, false);
    const auto agree = formats::configDisagreements(gguf, formats::detect(gguf));
    EXPECT_TRUE(agree.empty()) << (agree.empty() ? "" : agree.front());
    // Metadata that claims a third layer: the synthesized config disagrees, and nothing runs it.
    const fs::path layers = editedCopy(file, dir / "layers.gguf", "qwen3.block_count", io::GgufValue::u32(3), "");
    const io::Checkpoint edited = io::Checkpoint::open(layers);
    const auto disagree = formats::configDisagreements(edited, formats::detect(edited));
    ASSERT_FALSE(disagree.empty());
    EXPECT_THAT(disagree.front(), HasSubstr("num_hidden_layers 3, but the tensors hold 2 decoder layers"));
    EXPECT_THAT([&] { (void)openModelCheckpoint(layers, false); },
                testing::ThrowsMessage<Error>(
                    AllOf(HasSubstr("layers.gguf"), HasSubstr("describes another model than its tensors"))));
}

TEST(GgufExport, ALinearWithNaNInAGgufIsRefusedUnlessAllowed) {
    TempDir dir;
    const fs::path file = exportDemo(dir / "demo.gguf", io::GgmlType::F32);
    const fs::path nan = editedCopy(file, dir / "nan.gguf", "", std::nullopt, "blk.1.ffn_down.weight");
    const auto refusal = AllOf(HasSubstr("model.layers.1.mlp.down_proj"), HasSubstr("NaN or Inf"));
    EXPECT_THAT(
        [&] {
            exportDense({nan, dir / "dense", io::DType::F32, false}, {}, CancelToken{});
        },
        testing::ThrowsMessage<Error>(refusal));
    EXPECT_THAT(
        [&] { writeGguf(io::Checkpoint::open(nan), dir / "again.gguf", GgufExportOptions{}, {}, CancelToken{}); },
        testing::ThrowsMessage<Error>(refusal));
    EXPECT_FALSE(fs::exists(dir / "dense"));
    EXPECT_FALSE(fs::exists(dir / "again.gguf"));
    // --allow-nonfinite: written as it is.
    GgufExportOptions allow;
    allow.allowNonFinite = true;
    const io::Checkpoint written =
        io::Checkpoint::open(writeGguf(io::Checkpoint::open(nan), dir / "again.gguf", allow, {}, CancelToken{}));
    EXPECT_TRUE(std::isnan(written.tensor("model.layers.1.mlp.down_proj.weight").toF32().front()));
}

// ---------------------------------------------------------------------------------------------
// MoE: the experts stacked as llama.cpp's converter stacks them (blk.N.ffn_{gate,up,down}_exps
// [E, out, in] in row-major order, i.e. ggml ne = {in, out, E}), the router as blk.N.ffn_gate_inp in
// F32 whatever the type asked, and the expert keys llama.cpp reads.

const fs::path kMoeData = fs::path(QS_TEST_DATA_DIR) / "moe";

TEST(GgufExport, MoeExpertsAreStackedPerProjectionWithTheRouterDense) {
    TempDir dir;
    for (const auto& [name, arch, gate, down] :
         {std::tuple{"qwen3-moe-tiny", "qwen3moe", "mlp.experts.%.gate_proj", "mlp.experts.%.down_proj"},
          std::tuple{"mixtral-tiny", "llama", "block_sparse_moe.experts.%.w1", "block_sparse_moe.experts.%.w2"}}) {
        SCOPED_TRACE(name);
        const io::Checkpoint source = io::Checkpoint::open(kMoeData / name);
        GgufExportOptions options;
        options.chooser = uniformGgufType(io::GgmlType::F16);
        const io::GgufFile gguf =
            io::GgufFile::open(writeGguf(source, dir / (std::string(name) + ".gguf"), options, {}, CancelToken{}));
        const io::GgufMetadata& m = gguf.metadata();
        EXPECT_EQ(*m.string("general.architecture"), arch);
        EXPECT_EQ(m.integer(std::string(arch) + ".expert_count"), 4);
        EXPECT_EQ(m.integer(std::string(arch) + ".expert_used_count"), 2);
        EXPECT_EQ(m.contains(std::string(arch) + ".expert_feed_forward_length"), std::string(arch) == "qwen3moe");
        const auto nameOf = [](std::string pattern, int e) {
            return "model.layers.1." + pattern.replace(pattern.find('%'), 1, std::to_string(e)) + ".weight";
        };
        const io::TensorView gates = gguf.tensor("blk.1.ffn_gate_exps.weight"),
                             downs = gguf.tensor("blk.1.ffn_down_exps.weight");
        const io::TensorView router = gguf.tensor("blk.1.ffn_gate_inp.weight");
        EXPECT_EQ(router.info().typeName(), "f32");
        const std::string routerName = std::string(arch) == "llama" ? "block_sparse_moe.gate" : "mlp.gate";
        EXPECT_EQ(router.toF32(), source.tensor("model.layers.1." + routerName + ".weight").toF32());
        EXPECT_EQ(gates.info().typeName(), "f16");
        ASSERT_EQ(gates.shape().size(), 3u);
        EXPECT_EQ(gates.shape()[0], 4);
        const std::vector<float> g = gates.toF32(), d = downs.toF32();
        for (int e = 0; e < 4; ++e) {
            const std::vector<float> ge = source.tensor(nameOf(gate, e)).toF32(),
                                     de = source.tensor(nameOf(down, e)).toF32();
            ASSERT_EQ(g.size(), 4 * ge.size());
            for (std::size_t i = 0; i < ge.size(); i += 37)
                EXPECT_NEAR(g[e * ge.size() + i], ge[i], 1e-3f * std::abs(ge[i]) + 1e-4f);
            for (std::size_t i = 0; i < de.size(); i += 37)
                EXPECT_NEAR(d[e * de.size() + i], de[i], 1e-3f * std::abs(de[i]) + 1e-4f);
        }
        EXPECT_EQ(gguf.find("blk.1.ffn_gate.weight"), nullptr);
    }
}

TEST(GgufExport, RefusesAQwen3MoeThatLlamaCppWouldRunAsAnotherModel) {
    TempDir dir;
    for (const auto& [key, value, says] :
         {std::tuple{"norm_topk_prob", nlohmann::json(false), "always renormalises"},
          std::tuple{"mlp_only_layers", nlohmann::json{0}, "layer 0 is a dense MLP"}}) {
        const fs::path copy = dir / key;
        fs::create_directories(copy);
        for (const auto& f : fs::directory_iterator(kMoeData / "qwen3-moe-tiny"))
            fs::copy(f.path(), copy / f.path().filename());
        nlohmann::json config = nlohmann::json::parse(readText(copy / "config.json"));
        config[key] = value;
        std::ofstream(copy / "config.json") << config.dump();
        EXPECT_THAT([&] { writeGguf(io::Checkpoint::open(copy), dir / "out.gguf", {}, {}, CancelToken{}); },
                    testing::ThrowsMessage<Error>(HasSubstr(says)));
        EXPECT_FALSE(fs::exists(dir / "out.gguf"));
    }
}
