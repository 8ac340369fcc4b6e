// GGUF read-back of the architectures whose tensors llama.cpp's converter renames, reorders or stacks:
// qwen3moe and Mixtral (llama with experts; stacked [E, out, in] experts and the router), gpt-oss (its
// gate/up halves and their biases as separate per-expert projections, sinks, router), gemma3 (norms
// stored as 1 + w, the sandwich norms under llama.cpp's names, the sliding-window pattern and both RoPE
// bases), phi3 (fused attn_qkv / ffn_up, partial rotary, LongRoPE factor tensors). Each tiny checkpoint
// of tests/data is written with writeGguf as F32, opened as a checkpoint, and must come back with the
// same config and the same logits as the safetensors model; broken files are refused in one line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/gguf_file.h"
#include "qs/io/gguf_writer.h"
#include "qs/model/model_config.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/dense_export.h"
#include "qs/pipeline/gguf_export.h"

#include "io_test_util.h"
#include "same_model_config.h"

using namespace qs;
using namespace qs::pipeline;
using qs::io::test::TempDir;
using testing::AllOf;
using testing::HasSubstr;
using testing::Not;

namespace {

namespace fs = std::filesystem;

const fs::path kData = fs::path(QS_TEST_DATA_DIR);

fs::path writeF32(const fs::path& source, const fs::path& destination) {
    GgufExportOptions options;
    options.chooser = uniformGgufType(io::GgmlType::F32);
    return writeGguf(io::Checkpoint::open(source), destination, options, {}, CancelToken{});
}

// A copy of a GGUF whose metadata `edit` may change and whose tensors `keep` selects.
fs::path rewrittenCopy(const fs::path& from, const fs::path& to, const std::function<void(io::GgufWriter&)>& edit,
                       const std::function<bool(const io::TensorInfo&)>& keep) {
    const io::GgufFile source = io::GgufFile::open(from);
    io::GgufWriter w(to);
    for (const auto& [k, v] : source.metadata().entries()) w.set(k, v);
    edit(w);
    for (const auto& t : source.tensors()) {
        if (!keep(t)) continue;
        const auto bytes = source.view(t).bytes();
        w.addTensor(t.name, *t.ggmlType, t.shape, std::vector<std::byte>(bytes.begin(), bytes.end()));
    }
    return w.finish();
}

// 64 token ids spread over the vocabulary (the models are random: any ids exercise every weight).
std::vector<model::TokenId> someTokens(int vocab) {
    std::vector<model::TokenId> tokens;
    for (int i = 0; i < 64; ++i) tokens.push_back(static_cast<model::TokenId>((i * 37 + 11) % vocab));
    return tokens;
}

// Both files hold the same tensors, byte for byte.
void expectSameTensors(const fs::path& first, const fs::path& second) {
    const io::GgufFile a = io::GgufFile::open(first), b = io::GgufFile::open(second);
    ASSERT_EQ(b.tensors().size(), a.tensors().size());
    for (const auto& t : a.tensors()) {
        const io::TensorInfo* other = b.find(t.name);
        ASSERT_NE(other, nullptr) << t.name;
        EXPECT_EQ(other->shape, t.shape) << t.name;
        const auto x = a.view(t).bytes(), y = b.view(*other).bytes();
        EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << t.name;
    }
}

// The largest logit difference between two models on the same tokens, against the largest logit.
void expectSameLogits(const io::Checkpoint& original, const io::Checkpoint& gguf, int vocab, const char* what) {
    const auto tokens = someTokens(vocab);
    const MatrixF want = model::Transformer::fromCheckpoint(original).forward(tokens);
    const MatrixF got = model::Transformer::fromCheckpoint(gguf).forward(tokens);
    ASSERT_EQ(got.rows(), want.rows());
    ASSERT_EQ(got.cols(), want.cols());
    const float scale = want.cwiseAbs().maxCoeff();
    const float diff = (got - want).cwiseAbs().maxCoeff();
    EXPECT_LE(diff, 1e-5f * scale) << "largest logit " << scale;
    std::printf("[ figures  ] %s: largest logit difference %.3g (largest logit %.3g)\n", what, diff, scale);
}

struct Case {
    const char* data;  // under tests/data
    const char* ggufArch;
};

class GgufReadBack : public testing::TestWithParam<Case> {};

}  // namespace

TEST_P(GgufReadBack, ConfigAndLogitsAreTheSafetensorsModels) {
    TempDir dir;
    const fs::path source = kData / GetParam().data;
    const fs::path file = writeF32(source, dir / "model.gguf");
    const io::Checkpoint original = io::Checkpoint::open(source), gguf = io::Checkpoint::open(file);
    ASSERT_EQ(*gguf.gguf()->metadata().string("general.architecture"), GetParam().ggufArch);
    const model::ModelConfig a = model::ModelConfig::fromCheckpoint(original),
                             b = model::ModelConfig::fromCheckpoint(gguf);
    test::expectSameModelConfig(a, b);

    // Every tensor the forward pass reads is there under its Hugging Face name, with its values (f32
    // rounding only: gemma3's norms come back as (1 + w) - 1).
    for (const auto& t : original.tensors()) {
        const io::CheckpointTensor* read = gguf.find(t.info->name);
        ASSERT_NE(read, nullptr) << t.info->name;
        EXPECT_EQ(read->info->shape, t.info->shape) << t.info->name;
        const auto want = original.tensor(t.info->name).toF32(), got = gguf.tensor(t.info->name).toF32();
        for (std::size_t i = 0; i < want.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 1e-7f) << t.info->name << "[" << i << "]";
    }

    expectSameLogits(original, gguf, a.vocabSize, GetParam().data);
}

// The GGUF read back and written again (writeGguf from the GGUF checkpoint) is the same file's tensors
// byte for byte: the read-back is the exact inverse of the planner (gemma3's (1 + w) - 1 + 1 included).
TEST_P(GgufReadBack, WritingTheReadBackGgufAgainGivesTheSameTensors) {
    TempDir dir;
    const fs::path first = writeF32(kData / GetParam().data, dir / "first.gguf");
    expectSameTensors(first, writeF32(first, dir / "second.gguf"));
}

INSTANTIATE_TEST_SUITE_P(Architectures, GgufReadBack,
                         testing::Values(Case{"moe/qwen3-moe-tiny", "qwen3moe"}, Case{"moe/mixtral-tiny", "llama"},
                                         Case{"gemma3/gemma3-text-tiny", "gemma3"}, Case{"phi3/tiny-random", "phi3"},
                                         Case{"phi3/tiny-random-longrope", "phi3"}),
                         [](const auto& info) {
                             std::string name = info.param.data;
                             for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                             return name;
                         });

// Each expert is a view on its rows of the stacked tensor, in the mapped file: nothing is copied.
TEST(GgufReadBackExperts, EachExpertIsASliceOfTheStackedBytes) {
    TempDir dir;
    const fs::path file = writeF32(kData / "moe" / "mixtral-tiny", dir / "mixtral.gguf");
    const io::Checkpoint gguf = io::Checkpoint::open(file);
    const io::TensorView stacked = gguf.gguf()->tensor("blk.1.ffn_down_exps.weight");
    ASSERT_EQ(stacked.shape(), (std::vector<std::int64_t>{4, 32, 32}));
    for (int e = 0; e < 4; ++e) {
        const io::TensorView w2 =
            gguf.tensor("model.layers.1.block_sparse_moe.experts." + std::to_string(e) + ".w2.weight");
        EXPECT_EQ(w2.bytes().data(), stacked.bytes().data() + e * 32 * 32 * sizeof(float));
        EXPECT_EQ(w2.bytes().size(), 32 * 32 * sizeof(float));
    }
    EXPECT_EQ(gguf.find("blk.1.ffn_down_exps.weight"), nullptr);
    EXPECT_NE(gguf.find("model.layers.1.block_sparse_moe.gate.weight"), nullptr);
    EXPECT_EQ(gguf.config()["model_type"], "mixtral");
    EXPECT_EQ(gguf.config()["num_local_experts"], 4);
}

// A stacked tensor that holds another number of experts than the key says is refused at opening, in one
// line naming the tensor and the key.
TEST(GgufReadBackExperts, AStackedTensorDisagreeingWithTheExpertCountIsRefused) {
    TempDir dir;
    const fs::path file = writeF32(kData / "moe" / "qwen3-moe-tiny", dir / "moe.gguf");
    for (const std::uint32_t count : {3u, 5u}) {
        const fs::path broken = rewrittenCopy(
            file, dir / ("count" + std::to_string(count) + ".gguf"),
            [&](io::GgufWriter& w) { w.set("qwen3moe.expert_count", io::GgufValue::u32(count)); },
            [](const io::TensorInfo&) { return true; });
        EXPECT_THAT([&] { (void)io::Checkpoint::open(broken); },
                    testing::ThrowsMessage<Error>(AllOf(HasSubstr("count" + std::to_string(count) + ".gguf"),
                                                        HasSubstr("blk.0."), HasSubstr("_exps.weight' [4, "),
                                                        HasSubstr("qwen3moe.expert_count"), Not(HasSubstr("\n")))));
    }
    // Stacked tensors in a file whose key says no experts (or lacks it).
    const fs::path none = rewrittenCopy(
        file, dir / "none.gguf", [](io::GgufWriter& w) { w.set("qwen3moe.expert_count", io::GgufValue::u32(0)); },
        [](const io::TensorInfo&) { return true; });
    EXPECT_THAT(
        [&] { (void)io::Checkpoint::open(none); },
        testing::ThrowsMessage<Error>(AllOf(HasSubstr("_exps.weight' [4, "),
                                            HasSubstr("stacks experts, but qwen3moe.expert_count is missing or 0"))));
    // A missing stacked tensor: the model cannot run, and the error names the expert it lacks.
    const fs::path missing = rewrittenCopy(
        file, dir / "missing.gguf", [](io::GgufWriter&) {},
        [](const io::TensorInfo& t) { return t.name != "blk.1.ffn_up_exps.weight"; });
    const io::Checkpoint gguf = io::Checkpoint::open(missing);
    EXPECT_THAT([&] { (void)model::Transformer::fromCheckpoint(gguf).forward(someTokens(320)); },
                testing::ThrowsMessage<Error>(HasSubstr("model.layers.1.mlp.experts.0.up_proj")));
}

// gpt-oss's GGUF splits each expert's interleaved gate_up_proj (rows 2i gate_i, 2i + 1 up_i of the
// transposed [hidden, 2I] slice) into ffn_gate_exps and ffn_up_exps, with their biases; it reads back as
// each expert's gate_proj, up_proj and down_proj, with the router, the sinks and the norm before the MLP
// under their Hugging Face names, and runs as the safetensors checkpoint does.
TEST(GgufReadBackGptOss, ConfigExpertsAndLogitsAreTheSafetensorsModels) {
    TempDir dir;
    const fs::path source = kData / "gptoss" / "gptoss-tiny";
    const io::Checkpoint original = io::Checkpoint::open(source),
                         gguf = io::Checkpoint::open(writeF32(source, dir / "gptoss.gguf"));
    const model::ModelConfig a = model::ModelConfig::fromCheckpoint(original),
                             b = model::ModelConfig::fromCheckpoint(gguf);
    EXPECT_EQ(b.modelType, "gpt_oss");
    EXPECT_FALSE(b.moe.stackedExperts);
    EXPECT_EQ(b.moe.names.gate, "gate_proj");
    EXPECT_EQ(b.moe.names.up, "up_proj");
    EXPECT_EQ(b.moe.names.down, "down_proj");
    EXPECT_EQ(b.moe.names.router(), "mlp.router");
    model::ModelConfig expected = a;  // the same model, its experts named apart
    expected.moe.names = b.moe.names;
    expected.moe.stackedExperts = false;
    test::expectSameModelConfig(expected, b);

    // Everything but the stacked experts under its own name and values.
    for (const auto& t : original.tensors()) {
        if (t.info->name.find(".mlp.experts.") != std::string::npos) continue;
        ASSERT_NE(gguf.find(t.info->name), nullptr) << t.info->name;
        EXPECT_EQ(gguf.tensor(t.info->name).toF32(), original.tensor(t.info->name).toF32()) << t.info->name;
    }
    // Each expert's projections are its slice of the stacked ones, gate and up taken apart.
    const int e = a.moe.numExperts, ff = a.moe.expertIntermediateSize, h = a.hiddenSize;
    for (int layer = 0; layer < a.numLayers; ++layer) {
        const std::string p = "model.layers." + std::to_string(layer) + ".mlp.experts.";
        const auto gateUp = original.tensor(p + "gate_up_proj").toF32(),
                   gateUpBias = original.tensor(p + "gate_up_proj_bias").toF32();
        const auto down = original.tensor(p + "down_proj").toF32(),
                   downBias = original.tensor(p + "down_proj_bias").toF32();
        for (int x = 0; x < e; ++x) {
            const std::string q = p + std::to_string(x) + ".";
            const auto gate = gguf.tensor(q + "gate_proj.weight").toF32(),
                       up = gguf.tensor(q + "up_proj.weight").toF32();
            const auto gateBias = gguf.tensor(q + "gate_proj.bias").toF32(),
                       upBias = gguf.tensor(q + "up_proj.bias").toF32();
            const auto d = gguf.tensor(q + "down_proj.weight").toF32(),
                       dBias = gguf.tensor(q + "down_proj.bias").toF32();
            ASSERT_EQ(gate.size(), std::size_t(ff * h));
            ASSERT_EQ(d.size(), std::size_t(h * ff));
            for (int i = 0; i < ff; ++i) {
                for (int k = 0; k < h; ++k) {  // gate_up_proj[x][k][2i (+1)], down_proj[x][i][k]
                    ASSERT_EQ(gate[std::size_t(i * h + k)], gateUp[std::size_t((x * h + k) * 2 * ff + 2 * i)])
                        << q << i << "," << k;
                    ASSERT_EQ(up[std::size_t(i * h + k)], gateUp[std::size_t((x * h + k) * 2 * ff + 2 * i + 1)])
                        << q << i << "," << k;
                    ASSERT_EQ(d[std::size_t(k * ff + i)], down[std::size_t((x * ff + i) * h + k)])
                        << q << i << "," << k;
                }
                ASSERT_EQ(gateBias[std::size_t(i)], gateUpBias[std::size_t(x * 2 * ff + 2 * i)]);
                ASSERT_EQ(upBias[std::size_t(i)], gateUpBias[std::size_t(x * 2 * ff + 2 * i + 1)]);
            }
            for (int k = 0; k < h; ++k) ASSERT_EQ(dBias[std::size_t(k)], downBias[std::size_t(x * h + k)]);
        }
    }
    expectSameLogits(original, gguf, a.vocabSize, "gptoss-tiny");
}

// Written again from the GGUF read back, the experts' projections and biases are stacked as they came.
TEST(GgufReadBackGptOss, WritingTheReadBackGgufAgainGivesTheSameTensors) {
    TempDir dir;
    const fs::path first = writeF32(kData / "gptoss" / "gptoss-tiny", dir / "first.gguf");
    expectSameTensors(first, writeF32(first, dir / "second.gguf"));
}

// A stacked bias whose expert count disagrees with gpt-oss.expert_count is refused naming it.
TEST(GgufReadBackGptOss, AStackedBiasDisagreeingWithTheExpertCountIsRefused) {
    TempDir dir;
    const fs::path good = writeF32(kData / "gptoss" / "gptoss-tiny", dir / "good.gguf");
    const io::GgufFile file = io::GgufFile::open(good);
    io::GgufWriter w(dir / "bad.gguf");
    for (const auto& [k, v] : file.metadata().entries()) w.set(k, v);
    for (const auto& t : file.tensors()) {
        const auto bytes = file.view(t).bytes();
        std::vector<std::int64_t> shape = t.shape;
        std::size_t keep = bytes.size();
        if (t.name == "blk.2.ffn_up_exps.bias") {  // one expert's biases short
            keep -= bytes.size() / static_cast<std::size_t>(shape[0]);
            shape[0] -= 1;
        }
        w.addTensor(t.name, *t.ggmlType, shape,
                    std::vector<std::byte>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep)));
    }
    EXPECT_THAT([&] { (void)io::Checkpoint::open(w.finish()); },
                testing::ThrowsMessage<Error>(
                    AllOf(HasSubstr("blk.2.ffn_up_exps.bias"), HasSubstr("[experts, out]"), Not(HasSubstr("\n")))));
}

// Its Hugging Face checkpoint stacks and interleaves the experts, which a dense export of the GGUF does
// not rebuild: refused in one line, before anything is written.
TEST(GgufReadBackGptOss, ADenseExportIsRefusedInOneLine) {
    TempDir dir;
    const fs::path file = writeF32(kData / "gptoss" / "gptoss-tiny", dir / "gptoss.gguf");
    EXPECT_THAT(
        [&] {
            (void)exportDense({file, dir / "dense", io::DType::F32, false}, {}, CancelToken{});
        },
        testing::ThrowsMessage<Error>(AllOf(HasSubstr("gpt-oss"), HasSubstr("stacked"), Not(HasSubstr("\n")))));
    EXPECT_FALSE(fs::exists(dir / "dense"));
}

// A dense export of a MoE GGUF is the Hugging Face checkpoint again: per-expert tensors, the router, the config.
TEST(GgufReadBackExperts, DenseExportOfAQwen3MoeGgufIsItsHuggingFaceCheckpoint) {
    TempDir dir;
    const fs::path source = kData / "moe" / "qwen3-moe-tiny";
    const fs::path file = writeF32(source, dir / "moe.gguf");
    const fs::path out = exportDense({file, dir / "dense", io::DType::F32, false}, {}, CancelToken{});
    const io::Checkpoint dense = io::Checkpoint::open(out), original = io::Checkpoint::open(source);
    for (const auto& t : original.tensors()) {
        ASSERT_NE(dense.find(t.info->name), nullptr) << t.info->name;
        EXPECT_EQ(dense.tensor(t.info->name).toF32(), original.tensor(t.info->name).toF32()) << t.info->name;
    }
    test::expectSameModelConfig(model::ModelConfig::fromCheckpoint(original),
                                model::ModelConfig::fromCheckpoint(dense));
}

// Mixtral files converted before llama.cpp stacked the experts hold blk.N.ffn_{gate,up,down}.E.weight, one
// tensor per expert (llama.cpp still loads them): they read back under the same names and run the same.
TEST(GgufReadBackExperts, MixtralsUnstackedExpertsOfOlderFilesReadBackToo) {
    TempDir dir;
    const fs::path source = kData / "moe" / "mixtral-tiny";
    const io::GgufFile stacked = io::GgufFile::open(writeF32(source, dir / "stacked.gguf"));
    io::GgufWriter w(dir / "legacy.gguf");
    for (const auto& [k, v] : stacked.metadata().entries()) w.set(k, v);
    for (const auto& t : stacked.tensors()) {
        const auto bytes = stacked.view(t).bytes();
        const auto at = t.name.find("_exps.weight");
        if (at == std::string::npos) {
            w.addTensor(t.name, *t.ggmlType, t.shape, std::vector<std::byte>(bytes.begin(), bytes.end()));
            continue;
        }
        const std::size_t each = bytes.size() / static_cast<std::size_t>(t.shape[0]);
        for (std::int64_t e = 0; e < t.shape[0]; ++e)
            w.addTensor(t.name.substr(0, at) + "." + std::to_string(e) + ".weight", *t.ggmlType,
                        {t.shape[1], t.shape[2]},
                        std::vector<std::byte>(bytes.begin() + e * each, bytes.begin() + (e + 1) * each));
    }
    const io::Checkpoint legacy = io::Checkpoint::open(w.finish()), original = io::Checkpoint::open(source);
    ASSERT_NE(legacy.gguf()->find("blk.1.ffn_gate.3.weight"), nullptr);
    EXPECT_EQ(legacy.tensor("model.layers.1.block_sparse_moe.experts.3.w1.weight").toF32(),
              original.tensor("model.layers.1.block_sparse_moe.experts.3.w1.weight").toF32());
    const auto tokens = someTokens(320);
    EXPECT_EQ(model::Transformer::fromCheckpoint(legacy).forward(tokens),
              model::Transformer::fromCheckpoint(original).forward(tokens));
}
