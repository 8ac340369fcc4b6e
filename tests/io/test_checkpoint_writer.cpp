// CheckpointWriter: round trips through the reader for every dtype, sharding, the files it writes
// besides the shards, and that a failure at any point leaves neither output nor temporary folder.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <numeric>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_writer.h"

#include "io_test_util.h"

using namespace qs::io;
using qs::io::test::TempDir;
using testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

const DType kAllDTypes[] = {DType::F64,     DType::F32, DType::F16, DType::BF16, DType::F8_E4M3, DType::F8_E5M2,
                            DType::F8_E8M0, DType::I64, DType::I32, DType::I16,  DType::I8,      DType::U64,
                            DType::U32,     DType::U16, DType::U8,  DType::BOOL};

// Deterministic bytes that differ per tensor, so a mix-up between tensors would show.
std::vector<std::byte> patternBytes(std::size_t n, unsigned seed) {
    std::vector<std::byte> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>((i * 131 + seed * 17 + (i >> 8)) & 0xFF);
    return out;
}

std::vector<fs::path> folderEntries(const fs::path& dir) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename());
    std::sort(out.begin(), out.end());
    return out;
}

bool sameBytes(std::span<const std::byte> a, const std::vector<std::byte>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), b.size()) == 0;
}

}  // namespace

TEST(CheckpointWriter, RoundTripsEveryDtype) {
    TempDir dir;
    std::vector<std::vector<std::byte>> written;
    {
        CheckpointWriter w(dir / "out");
        unsigned seed = 0;
        for (const DType t : kAllDTypes) {
            const std::vector<std::int64_t> shape{3, 5};
            written.push_back(patternBytes(15 * dtypeSize(t), seed++));
            w.addTensor("t." + std::string(dtypeName(t)), t, shape, written.back());
        }
        w.addTensor("scalar", DType::F32, {}, patternBytes(4, 99));
        w.addTensor("empty", DType::BF16, {0, 7}, {});
        w.setConfig({{"model_type", "llama"}, {"num_hidden_layers", 2}});
        EXPECT_EQ(w.finish(), fs::weakly_canonical(dir / "out"));
    }
    EXPECT_EQ(folderEntries(dir.path()), (std::vector<fs::path>{"out"}));  // no temporary left
    EXPECT_EQ(folderEntries(dir / "out"), (std::vector<fs::path>{"config.json", "model.safetensors"}));
    const auto ckpt = Checkpoint::open(dir / "out");
    ASSERT_EQ(ckpt.tensors().size(), std::size(kAllDTypes) + 2);
    for (std::size_t i = 0; i < std::size(kAllDTypes); ++i) {
        const auto v = ckpt.tensor("t." + std::string(dtypeName(kAllDTypes[i])));
        EXPECT_EQ(v.dtype(), kAllDTypes[i]);
        EXPECT_EQ(v.shape(), (std::vector<std::int64_t>{3, 5}));
        EXPECT_TRUE(sameBytes(v.bytes(), written[i])) << dtypeName(kAllDTypes[i]);
    }
    EXPECT_EQ(ckpt.tensor("scalar").numel(), 1);
    EXPECT_EQ(ckpt.tensor("empty").numel(), 0);
    EXPECT_EQ(ckpt.shards()[0].metadata().at("format"), "pt");
    EXPECT_EQ(ckpt.shards()[0].header().headerLength % 8, 0u);
    EXPECT_EQ(ckpt.config()["num_hidden_layers"], 2);
}

TEST(CheckpointWriter, AddTensorF32EncodesWithTheDtypeRounding) {
    TempDir dir;
    const std::vector<float> values{1.0625f, 1.1875f, 500.0f, -0.001f, 3.0f, 7.0f};
    {
        CheckpointWriter w(dir / "out");
        w.addTensorF32("e4m3", DType::F8_E4M3, {2, 3}, values);
        w.addTensorF32("bf16", DType::BF16, {6}, values);
        w.addTensorF32("i8", DType::I8, {6}, values);
        w.finish();
    }
    const auto ckpt = Checkpoint::open(dir / "out" / "model.safetensors");
    std::vector<float> e4m3;
    for (const float v : values) e4m3.push_back(e4m3ToF32(f32ToE4m3(v)));
    EXPECT_EQ(ckpt.tensor("e4m3").toF32(), e4m3);
    EXPECT_EQ(ckpt.tensor("e4m3").toF32()[2], 448.0f);  // saturated
    EXPECT_EQ(ckpt.tensor("i8").toF32(), (std::vector<float>{1, 1, 127, 0, 3, 7}));
    EXPECT_EQ(ckpt.tensor("bf16").toF32()[4], 3.0f);
}

TEST(CheckpointWriter, ShardsAndReopensBitEqual) {
    TempDir dir;
    std::map<std::string, std::vector<std::byte>> written;
    {
        CheckpointWriter w(dir / "sharded", CheckpointWriterOptions{.maxShardBytes = 1000});
        for (int i = 0; i < 10; ++i) {
            const std::string name = "model.layers." + std::to_string(i) + ".mlp.up_proj.weight";
            written[name] = patternBytes(300, static_cast<unsigned>(i));
            w.addTensor(name, DType::F32, {15, 5}, written[name]);
        }
        written["big"] = patternBytes(2500, 77);  // larger than a shard: gets one alone
        w.addTensor("big", DType::U8, {2500}, written["big"]);
        written["tail"] = patternBytes(8, 78);
        w.addTensor("tail", DType::I64, {1}, written["tail"]);
        w.finish();
    }
    // 3 + 3 + 3 + 1 tensors of 300 bytes, then "big" alone, then "tail".
    EXPECT_EQ(folderEntries(dir / "sharded"),
              (std::vector<fs::path>{"model-00001-of-00006.safetensors", "model-00002-of-00006.safetensors",
                                     "model-00003-of-00006.safetensors", "model-00004-of-00006.safetensors",
                                     "model-00005-of-00006.safetensors", "model-00006-of-00006.safetensors",
                                     "model.safetensors.index.json"}));
    std::ifstream indexFile(dir / "sharded" / "model.safetensors.index.json");
    const auto index = nlohmann::json::parse(indexFile);
    EXPECT_EQ(index["metadata"]["total_size"], 10 * 300 + 2500 + 8);
    EXPECT_EQ(index["weight_map"]["big"], "model-00005-of-00006.safetensors");
    EXPECT_EQ(index["weight_map"]["model.layers.3.mlp.up_proj.weight"], "model-00002-of-00006.safetensors");

    const auto ckpt = Checkpoint::open(dir / "sharded");
    EXPECT_EQ(ckpt.shards().size(), 6u);
    ASSERT_EQ(ckpt.tensors().size(), written.size());
    for (const auto& [name, bytes] : written) EXPECT_TRUE(sameBytes(ckpt.tensor(name).bytes(), bytes)) << name;
    for (const auto& shard : ckpt.shards()) {
        if (shard.tensors().size() > 1) {
            EXPECT_LE(shard.header().dataLength(), 1000u);
        }
    }
}

TEST(CheckpointWriter, WrongByteSizeLeavesNothingBehind) {
    TempDir dir;
    CheckpointWriter w(dir / "out");
    w.addTensor("a", DType::F32, {2}, patternBytes(8, 1));
    EXPECT_THAT([&] { w.addTensor("b", DType::F32, {3}, patternBytes(10, 2)); },
                testing::ThrowsMessage<qs::Error>(HasSubstr("tensor 'b': 10 bytes given but F32 [3] needs 12")));
    EXPECT_TRUE(folderEntries(dir.path()).empty());
    EXPECT_THAT([&] { w.finish(); }, testing::ThrowsMessage<qs::Error>(HasSubstr("failed earlier")));
    EXPECT_TRUE(folderEntries(dir.path()).empty());
}

TEST(CheckpointWriter, ExceptionBetweenCallsLeavesNothingBehind) {
    TempDir dir;
    try {
        CheckpointWriter w(dir / "out", CheckpointWriterOptions{.maxShardBytes = 16});
        w.addTensor("a", DType::F32, {4}, patternBytes(16, 1));
        w.addTensor("b", DType::F32, {4}, patternBytes(16, 2));  // a second shard is under way
        w.copyAuxiliaryFiles(std::string(QS_TEST_DATA_DIR) + "/io/gpt2-capp-tiny");
        EXPECT_EQ(folderEntries(dir.path()).size(), 1u);  // the temporary folder, hidden
        EXPECT_EQ(folderEntries(dir.path())[0].string().rfind(".out.tmp-", 0), 0u);
        throw std::runtime_error("caller gave up");
    } catch (const std::runtime_error&) {}
    EXPECT_TRUE(folderEntries(dir.path()).empty());
}

TEST(CheckpointWriter, RejectsBadTensors) {
    TempDir dir;
    {
        CheckpointWriter w(dir / "out");
        w.addTensor("a", DType::U8, {1}, patternBytes(1, 1));
        EXPECT_THAT([&] { w.addTensor("a", DType::U8, {1}, patternBytes(1, 1)); },
                    testing::ThrowsMessage<qs::Error>(HasSubstr("tensor 'a' added twice")));
    }
    {
        CheckpointWriter w(dir / "out");
        EXPECT_THAT([&] { w.addTensor("n", DType::U8, {-1}, {}); },
                    testing::ThrowsMessage<qs::Error>(HasSubstr("negative dimension")));
    }
    {
        CheckpointWriter w(dir / "out");
        const std::vector<float> values(3);
        EXPECT_THAT(
            [&] {
                w.addTensorF32("f", DType::F16, {2, 2}, values);
            },
            testing::ThrowsMessage<qs::Error>(HasSubstr("tensor 'f': 3 values given but shape [2, 2] holds 4")));
    }
    EXPECT_TRUE(folderEntries(dir.path()).empty());
}

TEST(CheckpointWriter, RefusesDestinationInsideOrEqualToSource) {
    TempDir dir;
    fs::create_directories(dir / "src");
    EXPECT_THAT([&] { CheckpointWriter w(dir / "src", {.overwrite = true}, dir / "src"); },
                testing::ThrowsMessage<qs::Error>(HasSubstr("is inside (or is) the source checkpoint")));
    EXPECT_THAT([&] { CheckpointWriter w(dir / "src" / "q4", {}, dir / "src"); },
                testing::ThrowsMessage<qs::Error>(HasSubstr("is inside (or is) the source checkpoint")));
    qs::io::test::writeText(dir / "src" / "model.safetensors", "x");
    EXPECT_THAT([&] { CheckpointWriter w(dir / "src" / "." / "sub" / "..", {}, dir / "src" / "model.safetensors"); },
                testing::ThrowsMessage<qs::Error>(HasSubstr("is inside (or is) the source checkpoint")));
    EXPECT_THAT([&] { CheckpointWriter w(dir.path(), {.overwrite = true}, dir / "src"); },
                testing::ThrowsMessage<qs::Error>(HasSubstr("contains the source checkpoint")));
    EXPECT_THAT([&] { CheckpointWriter w(dir / "src"); },
                testing::ThrowsMessage<qs::Error>(HasSubstr("already exists")));
    EXPECT_THAT([&] { CheckpointWriter w(dir / "no" / "such" / "out"); },
                testing::ThrowsMessage<qs::Error>(HasSubstr("does not exist")));
    EXPECT_EQ(folderEntries(dir.path()), (std::vector<fs::path>{"src"}));
    EXPECT_EQ(folderEntries(dir / "src"), (std::vector<fs::path>{"model.safetensors"}));
}

TEST(CheckpointWriter, OverwriteReplacesOnlyAfterFinish) {
    TempDir dir;
    fs::create_directories(dir / "out");
    qs::io::test::writeText(dir / "out" / "old.txt", "old");
    {
        CheckpointWriter w(dir / "out", {.overwrite = true});
        w.addTensor("a", DType::U8, {2}, patternBytes(2, 1));
        EXPECT_TRUE(fs::exists(dir / "out" / "old.txt"));  // untouched until finish
        w.finish();
    }
    EXPECT_EQ(folderEntries(dir / "out"), (std::vector<fs::path>{"model.safetensors"}));
    EXPECT_EQ(folderEntries(dir.path()), (std::vector<fs::path>{"out"}));
}

TEST(CheckpointWriter, CopiesAuxiliaryFilesAndJsonFiles) {
    TempDir dir;
    const fs::path source = std::string(QS_TEST_DATA_DIR) + "/io/gpt2-capp-tiny";
    {
        CheckpointWriter w(dir / "copy", {}, source);
        const auto src = Checkpoint::open(source);
        for (const auto& t : src.tensors())
            w.addTensor(t.info->name, t.info->dtype, t.info->shape, src.tensor(t.info->name).bytes());
        w.setConfig(src.config());
        w.copyAuxiliaryFiles(source);
        w.addJsonFile("quantize_config.json", {{"bits", 4}});
        w.finish();
    }
    EXPECT_EQ(folderEntries(dir / "copy"), (std::vector<fs::path>{"LICENSE", "config.json", "generation_config.json",
                                                                  "model.safetensors", "quantize_config.json"}));
    const auto copy = Checkpoint::open(dir / "copy");
    const auto original = Checkpoint::open(source);
    EXPECT_EQ(copy.summary().parameterCount, original.summary().parameterCount);
    EXPECT_TRUE(copy.summary().hasGenerationConfig);
    EXPECT_EQ(copy.config(), original.config());
    for (const auto& t : original.tensors()) {
        const auto a = original.tensor(t.info->name).bytes();
        const auto b = copy.tensor(t.info->name).bytes();
        ASSERT_TRUE(a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0) << t.info->name;
    }
}

TEST(CheckpointWriter, EmptyCheckpointIsAValidFile) {
    TempDir dir;
    {
        CheckpointWriter w(dir / "empty");
        w.finish();
        EXPECT_THAT([&] { w.finish(); }, testing::ThrowsMessage<qs::Error>(HasSubstr("already finished")));
    }
    EXPECT_TRUE(SafetensorsFile::open(dir / "empty" / "model.safetensors").tensors().empty());
    EXPECT_TRUE(fs::exists(dir / "empty"));  // a finished writer's destructor keeps the result
    // A valid file, but a checkpoint of no tensors can only be an accident: opening one is refused.
    EXPECT_THAT([&] { (void)Checkpoint::open(dir / "empty"); },
                testing::ThrowsMessage<qs::Error>(HasSubstr("holds no tensors")));
}

namespace {

// The process's RssFile (mapped file pages resident), in bytes.
std::uint64_t rssFileBytes() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("RssFile:", 0) == 0) return std::stoull(line.substr(8)) * 1024;
    return 0;
}

}  // namespace

// A tensor converted and released leaves the resident set (what the Job does with each layer's
// linears), and reads the same bytes when it is touched again.
TEST(CheckpointWriter, ReleasedTensorPagesLeaveTheResidentSet) {
    TempDir dir;
    const std::size_t bytes = 32u << 20;  // 32 MiB of BF16
    const std::vector<std::byte> pattern = patternBytes(bytes, 5);
    {
        CheckpointWriter w(dir / "big");
        w.addTensor("w", DType::BF16, {4096, std::int64_t(bytes / 2 / 4096)}, pattern);
        w.finish();
    }
    const Checkpoint checkpoint = Checkpoint::open(dir / "big");
    const TensorView t = checkpoint.tensor("w");
    const qs::MatrixF first = t.toMatrix();  // touches every page
    const std::uint64_t touched = rssFileBytes();
    t.releasePages();
    const std::uint64_t released = rssFileBytes();
    EXPECT_GT(touched, released + bytes * 9 / 10) << touched << " -> " << released;
    EXPECT_TRUE(sameBytes(t.bytes(), pattern));
    const qs::MatrixF again = t.toMatrix();  // bit for bit (the pattern holds NaNs, so not by ==)
    EXPECT_EQ(std::memcmp(again.data(), first.data(), sizeof(float) * std::size_t(first.size())), 0);
}

TEST(CheckpointWriter, DeeplyNestedLargeConfigIsNotInflatedByIndentation) {
    TempDir dir;
    // 60 levels of nesting around 200,000 numbers: compact 400 KB, pretty-printed about 25 MB.
    nlohmann::json deep = nlohmann::json::array();
    for (int i = 0; i < 200'000; ++i) deep.push_back(1);
    for (int i = 0; i < 60; ++i) deep = nlohmann::json::array({deep});
    const nlohmann::json config = {{"model_type", "llama"}, {"extra", deep}};
    const std::string compact = config.dump();
    CheckpointWriter w(dir / "out");
    w.addTensorF32("w", DType::F32, {1}, std::vector<float>{1.0f});
    w.setConfig(config);
    w.finish();
    EXPECT_EQ(fs::file_size(dir / "out" / "config.json"), compact.size() + 1);
    // A real config stays pretty-printed.
    const nlohmann::json expected = {{"model_type", "llama"}, {"hidden_size", 8}};
    CheckpointWriter small(dir / "small");
    small.addTensorF32("w", DType::F32, {1}, std::vector<float>{1.0f});
    small.setConfig(expected);
    small.finish();
    std::ifstream in(dir / "small" / "config.json");
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    EXPECT_EQ(text, expected.dump(2) + "\n");
}
