// Checkpoint::open on single files, folders and sharded folders (hand-built here so that the index
// can be made wrong on purpose), config.json handling, summary(), and the real bundled checkpoints.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "qs/error.h"
#include "qs/io/checkpoint.h"

#include "io_test_util.h"

using namespace qs::io;
using qs::io::test::safetensorsImage;
using qs::io::test::TempDir;
using qs::io::test::writeBytes;
using qs::io::test::writeText;
using testing::HasSubstr;

namespace {

const std::string kShard1 = R"({"model.embed_tokens.weight":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
const std::string kShard2 =
    R"({"model.layers.0.mlp.down_proj.weight":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},)"
    R"("lm_head.weight":{"dtype":"U8","shape":[4],"data_offsets":[12,16]}})";
const std::string kIndex = R"({"metadata":{"total_size":32},"weight_map":{)"
                           R"("model.embed_tokens.weight":"model-00001-of-00002.safetensors",)"
                           R"("model.layers.0.mlp.down_proj.weight":"model-00002-of-00002.safetensors",)"
                           R"("lm_head.weight":"model-00002-of-00002.safetensors"}})";

void writeSharded(const TempDir& dir, const std::string& index) {
    writeBytes(dir / "model-00001-of-00002.safetensors", safetensorsImage(kShard1, 16));
    writeBytes(dir / "model-00002-of-00002.safetensors", safetensorsImage(kShard2, 16));
    writeText(dir / "model.safetensors.index.json", index);
}

std::string openError(const std::filesystem::path& p) {
    try {
        (void)Checkpoint::open(p);
    } catch (const qs::Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST(Checkpoint, OpensShardedFolder) {
    TempDir dir;
    writeSharded(dir, kIndex);
    writeText(dir / "config.json",
              R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":2,"num_hidden_layers":1})");
    writeText(dir / "tokenizer.json", "{}");
    const auto ckpt = Checkpoint::open(dir.path());
    ASSERT_EQ(ckpt.shards().size(), 2u);
    ASSERT_EQ(ckpt.tensors().size(), 3u);
    EXPECT_EQ(ckpt.tensors()[0].info->name, "lm_head.weight");  // sorted by name
    const auto* down = ckpt.find("model.layers.0.mlp.down_proj.weight");
    ASSERT_NE(down, nullptr);
    EXPECT_EQ(down->shard, 1u);
    EXPECT_EQ(down->naming.layer, 0);
    EXPECT_EQ(down->naming.module, "mlp.down_proj");
    EXPECT_EQ(ckpt.tensor("lm_head.weight").toF32(), (std::vector<float>{12, 13, 14, 15}));
    const auto s = ckpt.summary();
    EXPECT_EQ(s.architecture, "LlamaForCausalLM");
    EXPECT_EQ(s.modelType, "llama");
    EXPECT_EQ(s.numLayers, 1);
    EXPECT_EQ(s.hiddenSize, 2);
    EXPECT_EQ(s.parameterCount, 4 + 6 + 4);
    EXPECT_EQ(s.bytesByDtype.at("F32"), 16u);
    EXPECT_EQ(s.bytesByDtype.at("BF16"), 12u);
    EXPECT_EQ(s.bytesByDtype.at("U8"), 4u);
    EXPECT_EQ(s.sizeOnDisk, 2 * 8 + kShard1.size() + kShard2.size() + 32);
    EXPECT_EQ(s.quantizationFormat, "dense");
    EXPECT_TRUE(s.hasTokenizer);
    EXPECT_FALSE(s.hasGenerationConfig);
}

TEST(Checkpoint, IndexNamingMissingShardIsAnError) {
    TempDir dir;
    writeSharded(dir, kIndex);
    std::filesystem::remove(dir / "model-00002-of-00002.safetensors");
    EXPECT_THAT(openError(dir.path()),
                HasSubstr("model.safetensors.index.json: names shard model-00002-of-00002.safetensors"));
    EXPECT_THAT(openError(dir.path()), HasSubstr("which does not exist"));
}

TEST(Checkpoint, IndexMappingTensorToShardWithoutItIsAnError) {
    TempDir dir;
    std::string index = kIndex;
    const std::string wrong = R"("lm_head.weight":"model-00002)";
    index.replace(index.find(wrong), wrong.size(), R"("lm_head.weight":"model-00001)");
    writeSharded(dir, index);
    EXPECT_THAT(openError(dir.path()), HasSubstr("maps tensor 'lm_head.weight' to model-00001-of-00002.safetensors, "
                                                 "which does not hold it (it is in model-00002"));
}

TEST(Checkpoint, IndexNamingAbsentTensorIsAnError) {
    TempDir dir;
    std::string index = kIndex;
    index.insert(index.find("\"lm_head.weight\""), R"("ghost.weight":"model-00001-of-00002.safetensors",)");
    writeSharded(dir, index);
    EXPECT_THAT(openError(dir.path()),
                HasSubstr("maps tensor 'ghost.weight' to model-00001-of-00002.safetensors, which does not hold it"));
}

TEST(Checkpoint, ShardTensorMissingFromIndexIsAnError) {
    TempDir dir;
    std::string index = kIndex;
    index.replace(index.find(R"(,"lm_head.weight":"model-00002-of-00002.safetensors")"),
                  std::string(R"(,"lm_head.weight":"model-00002-of-00002.safetensors")").size(), "");
    writeSharded(dir, index);
    EXPECT_THAT(
        openError(dir.path()),
        HasSubstr(
            "model-00002-of-00002.safetensors: tensor 'lm_head.weight' is not listed in model.safetensors.index.json"));
}

TEST(Checkpoint, SameTensorInTwoShardsIsAnError) {
    TempDir dir;
    writeSharded(dir, kIndex);
    writeBytes(dir / "model-00001-of-00002.safetensors",
               safetensorsImage(R"({"model.embed_tokens.weight":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                                R"("lm_head.weight":{"dtype":"U8","shape":[4],"data_offsets":[16,20]}})",
                                20));
    EXPECT_THAT(openError(dir.path()),
                HasSubstr("tensor 'lm_head.weight' is in two shards, model-00001-of-00002.safetensors and "
                          "model-00002-of-00002.safetensors"));
}

TEST(Checkpoint, MalformedIndexAndShardAreErrors) {
    TempDir dir;
    writeSharded(dir, "{\"weight_map\": ");
    EXPECT_THAT(openError(dir.path()), HasSubstr("model.safetensors.index.json: not valid JSON"));
    writeSharded(dir, R"({"weight_map":{"a":"../x.safetensors"}})");
    EXPECT_THAT(openError(dir.path()), HasSubstr("which is not a file in the checkpoint's folder"));
    writeSharded(dir, R"({"weight_map":[]})");
    EXPECT_THAT(openError(dir.path()), HasSubstr("needs a \"weight_map\" object"));
    writeSharded(dir, kIndex);
    writeBytes(dir / "model-00002-of-00002.safetensors", safetensorsImage(kShard2, 17));
    EXPECT_THAT(openError(dir.path()), HasSubstr("model-00002-of-00002.safetensors: has 1 trailing bytes"));
}

TEST(Checkpoint, ConfigThatIsNotJsonIsAnError) {
    TempDir dir;
    writeBytes(dir / "model.safetensors", safetensorsImage(kShard1, 16));
    writeText(dir / "config.json", "{\"model_type\": llama}");
    EXPECT_THAT(openError(dir.path()), HasSubstr("config.json: not valid JSON"));
    writeText(dir / "config.json", R"({"rope_theta": 1e400})");
    EXPECT_THAT(openError(dir.path()), HasSubstr("config.json: not valid JSON: number overflow"));
    writeText(dir / "config.json", "[]");
    EXPECT_THAT(openError(dir.path()), HasSubstr("config.json: must be a JSON object"));
}

TEST(Checkpoint, FolderWithoutSafetensorsOrWithSeveralIsAnError) {
    TempDir dir;
    EXPECT_THAT(openError(dir.path()), HasSubstr("no .safetensors or .gguf file"));
    writeBytes(dir / "a.safetensors", safetensorsImage(kShard1, 16));
    writeBytes(dir / "b.safetensors", safetensorsImage(kShard1, 16));
    EXPECT_THAT(openError(dir.path()), HasSubstr("holds 2 .safetensors files but no model.safetensors.index.json"));
    EXPECT_THAT(openError(dir / "missing"), HasSubstr("no such file or folder"));
}

TEST(Checkpoint, QuantizationFormatFromConfigOrModelOpt) {
    TempDir dir;
    writeBytes(dir / "model.safetensors", safetensorsImage(kShard1, 16));
    writeText(dir / "config.json", R"({"quantization_config":{"quant_method":"gptq","bits":4}})");
    auto ckpt = Checkpoint::open(dir / "model.safetensors");
    EXPECT_EQ(ckpt.summary().quantizationFormat, "gptq");
    EXPECT_EQ(ckpt.quantizationConfig()["bits"], 4);
    writeText(dir / "config.json", R"({"model_type":"llama"})");
    writeText(dir / "hf_quant_config.json",
              R"({"producer":{"name":"modelopt"},"quantization":{"quant_algo":"NVFP4","group_size":16}})");
    ckpt = Checkpoint::open(dir.path());
    EXPECT_EQ(ckpt.summary().quantizationFormat, "NVFP4");
    EXPECT_EQ(ckpt.quantizationConfig()["quantization"]["group_size"], 16);
}

TEST(Checkpoint, OpensBundledStories260K) {
    const auto ckpt = Checkpoint::open(std::string(QS_RESOURCES_DIR) + "/models/stories260K");
    const auto s = ckpt.summary();
    EXPECT_EQ(ckpt.tensors().size(), 47u);
    EXPECT_EQ(s.architecture, "LlamaForCausalLM");
    EXPECT_EQ(s.numLayers, 5);
    EXPECT_EQ(s.hiddenSize, 64);
    EXPECT_EQ(s.parameterCount, 260032);
    EXPECT_EQ(s.bytesByDtype.at("F32"), 260032u * 4);
    EXPECT_EQ(s.sizeOnDisk, 1045112u);
    EXPECT_EQ(ckpt.tensor("model.layers.0.mlp.down_proj.weight").shape(), (std::vector<std::int64_t>{64, 172}));
    const auto* norm = ckpt.find("model.norm.weight");
    ASSERT_NE(norm, nullptr);
    EXPECT_EQ(norm->naming.role, TensorRole::Norm);
}

TEST(Checkpoint, OpensRealGpt2Checkpoint) {
    const auto ckpt = Checkpoint::open(std::string(QS_TEST_DATA_DIR) + "/io/gpt2-capp-tiny");
    const auto s = ckpt.summary();
    EXPECT_EQ(ckpt.tensors().size(), 52u);
    EXPECT_EQ(s.architecture, "GPT2LMHeadModel");
    EXPECT_EQ(s.modelType, "gpt2");
    EXPECT_EQ(s.numLayers, 4);
    EXPECT_EQ(s.hiddenSize, 64);
    EXPECT_EQ(s.parameterCount, 236224);
    EXPECT_EQ(s.sizeOnDisk, 949792u);
    EXPECT_TRUE(s.hasGenerationConfig);
    EXPECT_FALSE(s.hasTokenizer);
    EXPECT_EQ(s.quantizationFormat, "dense");
    const auto* attn = ckpt.find("transformer.h.3.attn.c_attn.weight");
    ASSERT_NE(attn, nullptr);
    EXPECT_EQ(attn->naming.layer, 3);
    EXPECT_EQ(attn->naming.module, "attn.c_attn");
    EXPECT_EQ(attn->naming.role, TensorRole::Linear);
    EXPECT_EQ(ckpt.find("transformer.wpe.weight")->info->shape, (std::vector<std::int64_t>{512, 64}));
}

TEST(Checkpoint, OpensRealMlxAdapterFolder) {
    const auto ckpt = Checkpoint::open(std::string(QS_TEST_DATA_DIR) + "/io/mlx-lora-adapter-minicpm");
    const auto s = ckpt.summary();
    EXPECT_EQ(ckpt.tensors().size(), 16u);
    EXPECT_EQ(s.parameterCount, 294912);
    EXPECT_EQ(s.numLayers, 40);  // no config.json: the highest layer index (39) + 1
    EXPECT_TRUE(ckpt.config().empty());
    EXPECT_EQ(ckpt.find("model.layers.39.self_attn.v_proj.lora_b")->naming.module, "self_attn.v_proj");
}

TEST(Checkpoint, EmptyIndexOrHeaderIsNotACheckpoint) {
    TempDir dir;
    writeSharded(dir, R"({"metadata":{},"weight_map":{}})");
    EXPECT_THAT(openError(dir.path()), HasSubstr("model.safetensors.index.json: weight_map is empty"));
    TempDir single;
    writeBytes(single / "model.safetensors", safetensorsImage("{}      ", 0));
    EXPECT_THAT(openError(single.path()), HasSubstr("model.safetensors: holds no tensors"));
    writeBytes(single / "model.safetensors", safetensorsImage(R"({"__metadata__":{"format":"pt"}})", 0));
    EXPECT_THAT(openError(single.path()), HasSubstr("holds no tensors"));
}

TEST(Checkpoint, IndexNamingMissingShardsIsRefused) {
    TempDir dir;
    writeSharded(dir, kIndex);
    std::filesystem::remove(dir / "model-00002-of-00002.safetensors");
    EXPECT_THAT(openError(dir.path()), HasSubstr("names shard model-00002-of-00002.safetensors"));
}

TEST(Checkpoint, TensorNamesThatWouldBreakMessagesAreRefused) {
    TempDir dir;
    const auto image = [](const std::string& name) {
        return safetensorsImage(R"({")" + name + R"(":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4);
    };
    writeBytes(dir / "model.safetensors", image("a\\nquantscope-cli: error: forged"));
    EXPECT_THAT(openError(dir.path()), HasSubstr("name holds a control character"));
    writeBytes(dir / "model.safetensors", image(std::string(200'000, 'n')));
    const std::string error = openError(dir.path());
    EXPECT_THAT(error, HasSubstr("name is 200000 bytes long, more than the 1024 QuantScope accepts"));
    EXPECT_LE(error.size(), qs::kMaxMessageBytes);
}

TEST(Checkpoint, QuantizationConfigMustBeAnObject) {
    TempDir dir;
    writeBytes(dir / "model.safetensors", safetensorsImage(kShard1, 16));
    writeText(dir / "config.json", R"({"model_type":"llama","quantization_config":42})");
    EXPECT_THAT(openError(dir.path()), HasSubstr("config.json: quantization_config is 42, expected an object"));
}
