// Checkpoint::open on GGUF files: llama.cpp's names as Hugging Face's, row-major shapes, the llama
// q/k rows put back in Hugging Face's order, config.json synthesized from the metadata, ggml types
// decoded through TensorView (whole tensors and any element range).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/gguf_writer.h"
#include "qs/quant/ggml_encode.h"

#include "gguf_test_reference.h"
#include "io_test_util.h"

using namespace qs::io;
using qs::io::test::converterPermute;
using qs::io::test::TempDir;
using qs::io::test::writeText;
using testing::AllOf;
using testing::HasSubstr;

namespace {

const std::filesystem::path& kTinyLlama = qs::io::test::kTinyLlamaGguf;

std::vector<float> randomValues(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

void addF32(GgufWriter& w, const std::string& name, const std::vector<std::int64_t>& shape,
            const std::vector<float>& values) {
    w.addTensor(name, GgmlType::F32, shape, std::as_bytes(std::span(values)));
}

std::vector<std::byte> q8(const std::vector<float>& values, std::int64_t cols) {
    const std::size_t rowBytes = ggmlRowBytes(GgmlType::Q8_0, cols);
    std::vector<std::byte> out(values.size() / static_cast<std::size_t>(cols) * rowBytes);
    for (std::size_t r = 0; r < values.size() / static_cast<std::size_t>(cols); ++r)
        qs::quant::ggmlEncodeRow(GgmlType::Q8_0, values.data() + r * static_cast<std::size_t>(cols),
                                 reinterpret_cast<std::uint8_t*>(out.data()) + r * rowBytes, cols);
    return out;
}

struct TinyModel {
    static constexpr std::int64_t hidden = 64, heads = 4, kvHeads = 2, headDim = 16, vocab = 32;
    std::vector<float> q = randomValues(hidden * hidden, 1);  // Hugging Face order
    std::vector<float> k = randomValues(kvHeads * headDim * hidden, 2);
    std::vector<float> qBias = randomValues(hidden, 3);
    std::vector<float> embed = randomValues(vocab * hidden, 4);
};

// A llama-architecture GGUF as llama.cpp's converter writes it: q/k (and q's bias) permuted; q in
// Q8_0, everything else F32.
void writeTinyLlama(const std::filesystem::path& path, const TinyModel& m, const std::string& arch = "llama",
                    const std::vector<float>* ropeFreqs = nullptr) {
    GgufWriter w(path);
    w.set("general.architecture", GgufValue::string(arch));
    w.set("general.file_type", GgufValue::u32(7));
    w.set(arch + ".embedding_length", GgufValue::u32(TinyModel::hidden));
    w.set(arch + ".block_count", GgufValue::u32(1));
    w.set(arch + ".feed_forward_length", GgufValue::u32(96));
    w.set(arch + ".context_length", GgufValue::u32(512));
    w.set(arch + ".attention.head_count", GgufValue::u32(TinyModel::heads));
    w.set(arch + ".attention.head_count_kv", GgufValue::u32(TinyModel::kvHeads));
    w.set(arch + ".attention.layer_norm_rms_epsilon", GgufValue::f32(1e-5f));
    w.set(arch + ".rope.freq_base", GgufValue::f32(500000.0f));
    w.set("tokenizer.ggml.bos_token_id", GgufValue::u32(1));
    const bool permute = arch == "llama";
    addF32(w, "token_embd.weight", {TinyModel::vocab, TinyModel::hidden}, m.embed);
    const auto q = permute ? converterPermute(m.q, TinyModel::hidden, TinyModel::hidden, TinyModel::heads) : m.q;
    w.addTensor("blk.0.attn_q.weight", GgmlType::Q8_0, {TinyModel::hidden, TinyModel::hidden},
                q8(q, TinyModel::hidden));
    addF32(w, "blk.0.attn_q.bias", {TinyModel::hidden},
           permute ? converterPermute(m.qBias, TinyModel::hidden, 1, TinyModel::heads) : m.qBias);
    addF32(w, "blk.0.attn_k.weight", {TinyModel::kvHeads * TinyModel::headDim, TinyModel::hidden},
           permute
               ? converterPermute(m.k, TinyModel::kvHeads * TinyModel::headDim, TinyModel::hidden, TinyModel::kvHeads)
               : m.k);
    if (ropeFreqs) addF32(w, "rope_freqs.weight", {static_cast<std::int64_t>(ropeFreqs->size())}, *ropeFreqs);
    w.finish();
}

std::vector<float> q8RoundTrip(const std::vector<float>& values, std::int64_t cols) {
    const std::vector<std::byte> bytes = q8(values, cols);
    std::vector<float> out(values.size());
    const std::size_t rowBytes = ggmlRowBytes(GgmlType::Q8_0, cols);
    for (std::size_t r = 0; r < values.size() / static_cast<std::size_t>(cols); ++r)
        ggmlDecodeRow(GgmlType::Q8_0, reinterpret_cast<const std::uint8_t*>(bytes.data()) + r * rowBytes,
                      out.data() + r * static_cast<std::size_t>(cols), cols);
    return out;
}

}  // namespace

TEST(GgufCheckpoint, OpensTheTinyLlamaFileUnderHuggingFaceNames) {
    const Checkpoint ck = Checkpoint::open(kTinyLlama);
    ASSERT_NE(ck.gguf(), nullptr);
    EXPECT_TRUE(ck.shards().empty());
    EXPECT_EQ(ck.tensors().size(), 12u);
    for (const char* name :
         {"model.embed_tokens.weight", "lm_head.weight", "model.norm.weight", "model.layers.0.input_layernorm.weight",
          "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.o_proj.weight",
          "model.layers.0.post_attention_layernorm.weight", "model.layers.0.mlp.down_proj.weight"})
        EXPECT_NE(ck.find(name), nullptr) << name;
    EXPECT_EQ(ck.tensor("model.embed_tokens.weight").shape(), (std::vector<std::int64_t>{32000, 8}));
    EXPECT_EQ(ck.tensor("model.layers.0.mlp.down_proj.weight").shape(),
              (std::vector<std::int64_t>{8, 32}));  // [out, in]
    const CheckpointTensor* q = ck.find("model.layers.0.self_attn.q_proj.weight");
    EXPECT_EQ(q->naming.layer, 0);
    EXPECT_EQ(q->naming.module, "self_attn.q_proj");
    EXPECT_EQ(q->info->ropeInterleavedHeads, 2);
    EXPECT_EQ(ck.fileOf(*q), kTinyLlama);

    const auto& c = ck.config();
    EXPECT_EQ(c["model_type"], "llama");
    EXPECT_EQ(c["architectures"][0], "LlamaForCausalLM");
    EXPECT_EQ(c["hidden_size"], 8);
    EXPECT_EQ(c["intermediate_size"], 32);
    EXPECT_EQ(c["num_hidden_layers"], 1);
    EXPECT_EQ(c["num_attention_heads"], 2);
    EXPECT_EQ(c["num_key_value_heads"], 2);
    EXPECT_EQ(c["head_dim"], 4);
    EXPECT_EQ(c["vocab_size"], 32000);
    EXPECT_EQ(c["rms_norm_eps"], 1e-05);  // the f32 in the file, read back as the decimal it was written from
    EXPECT_EQ(c["tie_word_embeddings"], false);
    EXPECT_EQ(c["bos_token_id"], 1);
    EXPECT_EQ(c["eos_token_id"], 2);
    EXPECT_EQ(c["torch_dtype"], "float16");
    EXPECT_TRUE(ck.quantizationConfig().empty());
    EXPECT_EQ(ck.configSource(), kTinyLlama);

    const CheckpointSummary s = ck.summary();
    EXPECT_EQ(s.architecture, "LlamaForCausalLM");
    EXPECT_EQ(s.numLayers, 1);
    EXPECT_EQ(s.quantizationFormat, "dense");
    EXPECT_TRUE(s.hasTokenizer);
    EXPECT_EQ(s.sizeOnDisk, 1750560u);
    EXPECT_EQ(s.bytesByDtype.size(), 2u);
    EXPECT_EQ(s.bytesByDtype.at("f16") + s.bytesByDtype.at("f32"), 1750560u - 724416u);
}

TEST(GgufCheckpoint, QkRowsComeBackInHuggingFaceOrder) {
    // The tiny file's attn_q as stored, against the checkpoint's q_proj: row h*d + 2j + a of the
    // file is row h*d + a*d/2 + j of the Hugging Face weight.
    const Checkpoint ck = Checkpoint::open(kTinyLlama);
    const GgufFile file = GgufFile::open(kTinyLlama);
    const std::vector<float> stored = file.tensor("blk.0.attn_q.weight").toF32();
    const std::vector<float> hf = ck.tensor("model.layers.0.self_attn.q_proj.weight").toF32();
    EXPECT_NE(stored, hf);
    EXPECT_EQ(converterPermute(hf, 8, 8, 2), stored);
}

TEST(GgufCheckpoint, DecodesQ8AndPermutedTensorsToTheHuggingFaceWeights) {
    TempDir dir;
    const TinyModel m;
    writeTinyLlama(dir / "tiny.gguf", m);
    const Checkpoint ck = Checkpoint::open(dir / "tiny.gguf");
    EXPECT_EQ(ck.quantizationConfig(), (nlohmann::json{{"quant_method", "gguf"}, {"file_type", 7}}));
    EXPECT_EQ(ck.summary().quantizationFormat, "gguf");
    const TensorView q = ck.tensor("model.layers.0.self_attn.q_proj.weight");
    EXPECT_EQ(q.info().typeName(), "q8_0");
    EXPECT_TRUE(q.info().decodesToF32());
    // Permuting, quantizing per row and un-permuting: each HF row is its own row quantized.
    EXPECT_EQ(q.toF32(), q8RoundTrip(m.q, TinyModel::hidden));
    const qs::MatrixF qm = q.toMatrix();
    EXPECT_EQ(qm.rows(), TinyModel::hidden);
    EXPECT_EQ(qm(5, 7), q8RoundTrip(m.q, TinyModel::hidden)[5 * TinyModel::hidden + 7]);
    EXPECT_EQ(ck.tensor("model.layers.0.self_attn.q_proj.bias").toF32(), m.qBias);
    EXPECT_EQ(ck.tensor("model.layers.0.self_attn.k_proj.weight").toF32(), m.k);
    EXPECT_EQ(ck.tensor("model.embed_tokens.weight").toF32(), m.embed);

    // Any element range decodes to the same values as the whole tensor, across rows and blocks.
    const std::vector<float> all = q.toF32();
    std::mt19937 rng(3);
    for (int i = 0; i < 200; ++i) {
        const std::size_t first = rng() % all.size(), count = rng() % (all.size() - first + 1);
        std::vector<float> part(count);
        q.decode(first, count, part.data());
        EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin() + static_cast<std::ptrdiff_t>(first)))
            << first << "+" << count;
    }
    std::vector<float> one(2);
    EXPECT_THROW(q.decode(all.size() - 1, 2, one.data()), qs::Error);

    const auto& c = ck.config();
    EXPECT_EQ(c["rope_theta"], 500000.0);
    EXPECT_EQ(c["tie_word_embeddings"], true);  // no output.weight
    EXPECT_EQ(c["attention_bias"], true);
    EXPECT_EQ(c["max_position_embeddings"], 512);
    EXPECT_TRUE(c["rope_scaling"].is_null());
}

TEST(GgufCheckpoint, QwenArchitecturesAreStoredInHuggingFaceOrder) {
    TempDir dir;
    const TinyModel m;
    writeTinyLlama(dir / "qwen.gguf", m, "qwen3");
    const Checkpoint ck = Checkpoint::open(dir / "qwen.gguf");
    EXPECT_EQ(ck.config()["model_type"], "qwen3");
    EXPECT_EQ(ck.find("model.layers.0.self_attn.k_proj.weight")->info->ropeInterleavedHeads, 0);
    EXPECT_EQ(ck.tensor("model.layers.0.self_attn.k_proj.weight").toF32(), m.k);
}

TEST(GgufCheckpoint, Llama3RopeFactorsBecomeTheirConfig) {
    // The factors llama.cpp's converter writes for Llama 3.1 (factor 8, low 1, high 4, 8192), head_dim 16.
    std::vector<float> factors;
    for (int i = 0; i < 16; i += 2) {
        const double freq = 1.0 / std::pow(500000.0, i / 16.0), wavelen = 2 * std::numbers::pi / freq;
        if (wavelen < 8192.0 / 4)
            factors.push_back(1.0f);
        else if (wavelen > 8192.0)
            factors.push_back(8.0f);
        else {
            const double smooth = (8192.0 / wavelen - 1.0) / 3.0;
            factors.push_back(static_cast<float>(1.0 / ((1 - smooth) / 8.0 + smooth)));
        }
    }
    ASSERT_EQ(factors.front(), 1.0f);
    ASSERT_EQ(factors.back(), 8.0f);
    TempDir dir;
    writeTinyLlama(dir / "l3.gguf", TinyModel{}, "llama", &factors);
    const nlohmann::json scaling = Checkpoint::open(dir / "l3.gguf").config()["rope_scaling"];
    EXPECT_EQ(scaling["rope_type"], "llama3");
    EXPECT_EQ(scaling["factor"], 8.0);
    EXPECT_EQ(scaling["original_max_position_embeddings"], 8192);

    factors[3] = 2.5f;  // not what any llama3 parameters give: named, so that the model loader refuses it
    writeTinyLlama(dir / "odd.gguf", TinyModel{}, "llama", &factors);
    EXPECT_EQ(Checkpoint::open(dir / "odd.gguf").config()["rope_scaling"]["rope_type"], "gguf_rope_freqs");
}

TEST(GgufCheckpoint, FoldersHoldingOneGgufOpenAndOthersAreRefused) {
    TempDir dir;
    std::filesystem::copy_file(kTinyLlama, dir / "model.gguf");
    writeText(dir / "README.md", "not a model");
    EXPECT_NE(Checkpoint::open(dir.path()).gguf(), nullptr);
    std::filesystem::copy_file(kTinyLlama, dir / "other.gguf");
    EXPECT_THAT([&] { (void)Checkpoint::open(dir.path()); },
                testing::ThrowsMessage<qs::Error>(HasSubstr("holds 2 .gguf files")));
    // The magic decides, not the name: a GGUF called .safetensors opens as GGUF.
    TempDir other;
    std::filesystem::copy_file(kTinyLlama, other / "weights.safetensors");
    EXPECT_NE(Checkpoint::open(other / "weights.safetensors").gguf(), nullptr);
}

TEST(GgufCheckpoint, ArchitecturesItDoesNotRunStillOpen) {
    TempDir dir;
    {
        GgufWriter w(dir / "gpt2.gguf");
        w.set("general.architecture", GgufValue::string("gpt2"));
        w.set("gpt2.embedding_length", GgufValue::u32(4));
        const std::vector<float> v(8, 1.0f);
        addF32(w, "token_embd.weight", {2, 4}, v);
        addF32(w, "position_embd.weight", {2, 4}, v);
        w.finish();
    }
    const Checkpoint ck = Checkpoint::open(dir / "gpt2.gguf");
    EXPECT_EQ(ck.config()["model_type"], "gpt2");
    EXPECT_FALSE(ck.config().contains("architectures"));
    EXPECT_NE(ck.find("position_embd.weight"), nullptr);  // no Hugging Face name: kept as llama.cpp names it
    EXPECT_EQ(ck.find("model.embed_tokens.weight")->info->ropeInterleavedHeads, 0);
}

TEST(GgufCheckpoint, NamesThatCollideOnceMappedAreRefused) {
    TempDir dir;
    {
        GgufWriter w(dir / "twice.gguf");
        w.set("general.architecture", GgufValue::string("qwen3"));
        const std::vector<float> v(4, 1.0f);
        addF32(w, "output.weight", {4}, v);
        addF32(w, "lm_head.weight", {4}, v);
        w.finish();
    }
    EXPECT_THAT([&] { (void)Checkpoint::open(dir / "twice.gguf"); },
                testing::ThrowsMessage<qs::Error>(AllOf(HasSubstr("twice.gguf"), HasSubstr("'lm_head.weight'"))));
}

TEST(GgufCheckpoint, AHeadCountPastIntIsRefusedNotTruncated) {
    TempDir dir;
    {
        GgufWriter w(dir / "heads.gguf");
        w.set("general.architecture", GgufValue::string("llama"));
        w.set("llama.attention.head_count", GgufValue::unsignedInteger(GgufValueType::U64, 4294967300ull));
        addF32(w, "blk.0.attn_q.weight", {8, 8}, std::vector<float>(64, 1.0f));
        w.finish();
    }
    // Read as an int, 2^32 + 4 heads were 4, and q's rows were put back in order as 4 heads.
    EXPECT_THAT([&] { (void)Checkpoint::open(dir / "heads.gguf"); },
                testing::ThrowsMessage<qs::Error>(
                    AllOf(HasSubstr("heads.gguf"), HasSubstr("num_attention_heads"), HasSubstr("4294967300"))));
}

TEST(GgufCheckpoint, AGgufOfMetadataOnlyIsNotACheckpoint) {
    TempDir dir;
    {
        GgufWriter w(dir / "metadata.gguf");
        w.set("general.architecture", GgufValue::string("llama"));
        w.finish();
    }
    // A valid GGUF (a tokenizer travels so), but as a model it would dequantize into nothing.
    EXPECT_THAT([&] { (void)Checkpoint::open(dir / "metadata.gguf"); },
                testing::ThrowsMessage<qs::Error>(HasSubstr("metadata.gguf: holds no tensors")));
}

TEST(GgufCheckpoint, TextThatIsNotUtf8IsRefusedAtOpening) {
    // GGUF strings are bytes; what becomes a Hugging Face name or config text must be UTF-8, or the
    // dense export (a JSON header) and inspect --json would fail later with a library's message.
    TempDir dir;
    {
        GgufWriter w(dir / "name.gguf");
        w.set("general.architecture", GgufValue::string("llama"));
        addF32(w, "blk.0.\xff.weight", {2, 2}, std::vector<float>(4, 1.0f));
        w.finish();
    }
    EXPECT_THAT([&] { (void)Checkpoint::open(dir / "name.gguf"); },
                testing::ThrowsMessage<qs::Error>(
                    AllOf(HasSubstr("name.gguf: tensor name 'blk.0.\\xff.weight'"), HasSubstr("not valid UTF-8"))));
    {
        GgufWriter w(dir / "arch.gguf");
        w.set("general.architecture", GgufValue::string("lla\xc3"));
        addF32(w, "token_embd.weight", {2, 2}, std::vector<float>(4, 1.0f));
        w.finish();
    }
    EXPECT_THAT([&] { (void)Checkpoint::open(dir / "arch.gguf"); },
                testing::ThrowsMessage<qs::Error>(AllOf(HasSubstr("arch.gguf"), HasSubstr("not valid UTF-8"))));
}
