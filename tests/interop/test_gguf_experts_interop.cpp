// Stacked experts of a quantized GGUF read back per expert, against ggml itself: ggml's quantizer fills
// blk.0.ffn_{gate,up,down}_exps of a qwen3moe file and a Mixtral one (llama with experts), the file is
// opened as a checkpoint, and each expert's linear decoded as `eval` decodes it (formats::LinearReader)
// must be, bit for bit, ggml's dequantize_row of that expert's rows of the stacked tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "qs/io/ggml_type.h"
#include "qs/io/gguf_writer.h"

#include "ggml_reference.h"
#include "ggml_test_rows.h"

namespace qs::interop {
namespace {

namespace fs = std::filesystem;
using io::GgmlType;

constexpr int kExperts = 3;
constexpr std::int64_t kHidden = 512, kWidth = 256;  // whole blocks of 256 for the K types

struct Stacked {
    std::string ggufName;
    std::string hfModule;  // the expert's projection as the architecture names it
    std::int64_t rows, cols;
    std::vector<std::uint8_t> bytes;
};

struct Arch {
    const char* gguf;
    const char* block;  // "mlp", "block_sparse_moe"
    const char* gate;
    const char* up;
    const char* down;
};

class TempFile {
public:
    explicit TempFile(const std::string& name)
        : path_(fs::temp_directory_path() / (name + "-" + std::to_string(std::random_device{}()) + ".gguf")) {}
    ~TempFile() { fs::remove(path_); }
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

// [experts, rows, cols] quantized by ggml, one expert's rows after another (the stacked layout).
Stacked quantizedStack(GgmlType type, const std::string& ggufName, const std::string& hfModule, std::int64_t rows,
                       std::int64_t cols, std::uint32_t seed) {
    const GgmlReference& ggml = GgmlReference::get();
    const auto& traits = io::ggmlTypeTraits(type);
    const bool iq = traits.name.starts_with("iq1") || traits.name.starts_with("iq2") || traits.name.starts_with("iq3");
    const std::vector<float> importance = makeImportance(cols, seed);
    Stacked s{ggufName, hfModule, rows, cols,
              std::vector<std::uint8_t>(static_cast<std::size_t>(kExperts * rows) * io::ggmlRowBytes(type, cols))};
    const std::size_t rowBytes = io::ggmlRowBytes(type, cols);
    for (std::int64_t r = 0; r < kExperts * rows; ++r) {
        const std::vector<float> x = makeRow(allRowKinds()[static_cast<std::size_t>(r) % allRowKinds().size()], cols,
                                             seed + static_cast<std::uint32_t>(r));
        EXPECT_TRUE(ggml.quantize(type, x.data(), s.bytes.data() + static_cast<std::size_t>(r) * rowBytes, 1, cols,
                                  iq ? importance.data() : nullptr));
    }
    return s;
}

void expectSameBits(const float* ours, const float* theirs, std::int64_t n, const std::string& what) {
    for (std::int64_t i = 0; i < n; ++i)
        if (std::memcmp(ours + i, theirs + i, sizeof(float)) != 0) {
            ADD_FAILURE() << what << " element " << i << ": ours " << ours[i] << ", ggml " << theirs[i];
            return;
        }
}

class GgufExpertsDecode : public ::testing::TestWithParam<GgmlType> {
protected:
    void SetUp() override { ASSERT_TRUE(GgmlReference::get().loaded()) << GgmlReference::get().error(); }
};

TEST_P(GgufExpertsDecode, EachExpertDecodesAsGgmlDecodesItsRows) {
    const GgmlType type = GetParam();
    const GgmlReference& ggml = GgmlReference::get();
    for (const Arch& arch : {Arch{"qwen3moe", "mlp", "gate_proj", "up_proj", "down_proj"},
                             Arch{"llama", "block_sparse_moe", "w1", "w3", "w2"}}) {
        SCOPED_TRACE(arch.gguf);
        const std::vector<Stacked> stacks = {
            quantizedStack(type, "blk.0.ffn_gate_exps.weight", arch.gate, kWidth, kHidden, 10),
            quantizedStack(type, "blk.0.ffn_up_exps.weight", arch.up, kWidth, kHidden, 20),
            quantizedStack(type, "blk.0.ffn_down_exps.weight", arch.down, kHidden, kWidth, 30)};
        const TempFile file(arch.gguf);
        {
            io::GgufWriter w(file.path());
            const std::string a = arch.gguf;
            w.set("general.architecture", io::GgufValue::string(a));
            w.set(a + ".block_count", io::GgufValue::u32(1));
            w.set(a + ".embedding_length", io::GgufValue::u32(kHidden));
            w.set(a + ".feed_forward_length", io::GgufValue::u32(kWidth));
            w.set(a + ".expert_count", io::GgufValue::u32(kExperts));
            w.set(a + ".expert_used_count", io::GgufValue::u32(2));
            w.set(a + ".expert_feed_forward_length", io::GgufValue::u32(kWidth));
            const std::vector<float> router(static_cast<std::size_t>(kExperts * kHidden), 0.5f);
            w.addTensor("blk.0.ffn_gate_inp.weight", GgmlType::F32, {kExperts, kHidden},
                        std::as_bytes(std::span<const float>(router)));
            for (const Stacked& s : stacks)
                w.addTensor(s.ggufName, type, {kExperts, s.rows, s.cols},
                            std::as_bytes(std::span<const std::uint8_t>(s.bytes)));
            w.finish();
        }
        const io::Checkpoint checkpoint = io::Checkpoint::open(file.path());
        const formats::LinearReader reader(checkpoint);
        for (const Stacked& s : stacks) {
            const std::size_t rowBytes = io::ggmlRowBytes(type, s.cols);
            for (int e = 0; e < kExperts; ++e) {
                const std::string prefix =
                    std::string("model.layers.0.") + arch.block + ".experts." + std::to_string(e) + "." + s.hfModule;
                const MatrixF ours = reader.decodeF32(prefix);
                ASSERT_EQ(ours.rows(), s.rows) << prefix;
                ASSERT_EQ(ours.cols(), s.cols) << prefix;
                std::vector<float> theirs(static_cast<std::size_t>(s.rows * s.cols));
                const std::uint8_t* first = s.bytes.data() + static_cast<std::size_t>(e * s.rows) * rowBytes;
                ASSERT_TRUE(ggml.dequantizeRow(type, first, theirs.data(), s.rows * s.cols));
                expectSameBits(ours.data(), theirs.data(), s.rows * s.cols, prefix);
            }
        }
    }
}

// Q8_0 and the K types llama-quantize's mixes use for experts.
INSTANTIATE_TEST_SUITE_P(Types, GgufExpertsDecode,
                         ::testing::Values(GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q2_K),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                             return std::string(io::ggmlTypeTraits(info.param).name);
                         });

}  // namespace
}  // namespace qs::interop
