// Phi-3 end to end: the Job quantizes the tiny Phi-3 (scripts/make-tiny-phi3.py) as seven linears per
// layer, and every export writes qkv_proj and gate_up_proj fused as the checkpoint had them. Read back
// through our reader, the fused tensors hold the Job's parts row after row (FP8 per tensor: requantized
// to the largest of the parts' scales, as vLLM does when it fuses split shards), and the export runs as
// the Job's model.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include <unistd.h>

#include "qs/error.h"
#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "qs/io/dtype.h"
#include "qs/io/gguf_file.h"
#include "qs/model/model_config.h"
#include "qs/model/tokenizer.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/decoded_weights.h"
#include "qs/pipeline/export_check.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/gguf_export.h"
#include "qs/pipeline/gguf_result_export.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/work_folder.h"

#include "tiny_checkpoint_job.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

namespace fs = std::filesystem;

const fs::path kPhi3 = fs::path(QS_TEST_DATA_DIR) / "phi3" / "tiny-random";

// The Job's parts of one fused projection, stacked.
MatrixF stackedParts(const QuantizedLayer& layer, const std::vector<std::string>& parts) {
    std::vector<MatrixF> ws;
    Eigen::Index rows = 0;
    for (const auto& p : parts) {
        ws.push_back(layer.at(p)->dequantize());  // as stored: AWQ's W·diag(s), its 1/s folded into the norm
        rows += ws.back().rows();
    }
    MatrixF out(rows, ws.front().cols());
    Eigen::Index at = 0;
    for (const auto& w : ws) {
        out.middleRows(at, w.rows()) = w;
        at += w.rows();
    }
    return out;
}

// The nearest E4M3 value (brute force over the 254 finite codes), saturating at ±448.
float nearestE4m3(float v) {
    float best = 0.0f;
    for (int code = 0; code < 256; ++code) {
        if ((code & 0x7F) == 0x7F) continue;  // NaN
        const float x = io::e4m3ToF32(static_cast<std::uint8_t>(code));
        if (std::abs(x - v) < std::abs(best - v)) best = x;
    }
    return best;
}

// vLLM's requantize_with_max_scale for fused FP8 shards: dequantize each part with its own per-tensor
// scale, quantize with the largest.
MatrixF requantizedToMaxScale(const QuantizedLayer& layer, const std::vector<std::string>& parts) {
    float maxScale = 0.0f;
    for (const auto& p : parts) maxScale = std::max(maxScale, layer.at(p)->scales(0, 0));
    MatrixF w = stackedParts(layer, parts);
    for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = nearestE4m3(w.data()[i] / maxScale) * maxScale;
    return w;
}

struct Case {
    const char* method;
    const char* format;
    float tolerance;  // of the largest logit
};

}  // namespace

TEST(Phi3Export, FusedProjectionsAreWrittenFusedAndReadBackAsTheJobsParts) {
    const io::Checkpoint source = io::Checkpoint::open(kPhi3);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(source);
    const auto sequence = test::tinyTokens(kPhi3, 1, 48).front();
    for (const Case& c : {Case{"gptq4", "gptq_v2", 2e-3f}, Case{"awq4", "awq", 2e-3f}, Case{"fp8-tensor", "fp8", 2e-2f},
                          Case{"rtn4", "gptq_v2", 2e-3f}}) {
        SCOPED_TRACE(c.method);
        const MethodResult result = test::quantizeTiny(kPhi3, c.method);
        ASSERT_EQ(result.layers.front().size(), 7u);  // the Job saw q, k, v, o, gate, up, down
        const fs::path dir =
            fs::temp_directory_path() / ("qs_phi3_" + std::string(c.method) + "_" + std::to_string(::getpid()));
        fs::remove_all(dir);
        exportCheckpoint({kPhi3, dir, c.format, false, {}}, result, {}, CancelToken{});
        const io::Checkpoint exported = io::Checkpoint::open(dir);
        for (const auto& t : exported.tensors()) {
            EXPECT_EQ(t.info->name.find("q_proj."), std::string::npos) << t.info->name;
            EXPECT_EQ(t.info->name.find(".gate_proj."), std::string::npos) << t.info->name;
            EXPECT_EQ(t.info->name.find(".up_proj."), std::string::npos) << t.info->name;
        }
        const formats::LinearReader reader(exported);
        for (int layer = 0; layer < config.numLayers; ++layer)
            for (const auto& [fused, parts] : model::fusedModules(config.arch)) {
                SCOPED_TRACE(fused);
                const MatrixF got = reader.decodeF32(config.layerPrefix(layer) + fused);
                const MatrixF want = stackedParts(result.layers[std::size_t(layer)], parts);
                ASSERT_EQ(got.rows(), want.rows());
                if (std::string(c.method) == "fp8-tensor") {
                    // One scale for the fused tensor: each part's values requantized to the largest scale.
                    EXPECT_LE(
                        (got - requantizedToMaxScale(result.layers[std::size_t(layer)], parts)).cwiseAbs().maxCoeff(),
                        0.0f);
                    EXPECT_EQ(exported.tensor(config.layerPrefix(layer) + fused + ".weight_scale").numel(), 1);
                } else {
                    MatrixF expected = want;
                    // AWQ: down_proj's 1/s is folded into up_proj's rows (the second half of gate_up_proj).
                    if (std::string(c.method) == "awq4" && fused == "mlp.gate_up_proj") {
                        const auto& s = result.layers[std::size_t(layer)].at("mlp.down_proj")->inputScales;
                        ASSERT_EQ(Eigen::Index(s.size()), want.rows() / 2);
                        for (Eigen::Index r = 0; r < want.rows() / 2; ++r)
                            expected.row(want.rows() / 2 + r) /= s[std::size_t(r)];
                    }
                    EXPECT_LT((got - expected).cwiseAbs().maxCoeff(),
                              2e-3f * expected.cwiseAbs().maxCoeff());  // F16 scales
                }
            }
        // The export computes what the Job measured (our reader splits the fused tensors again); FP8 per
        // tensor was requantized, checked exactly above.
        if (std::string(c.method) == "fp8-tensor") {
            fs::remove_all(dir);
            continue;
        }
        model::Transformer readBack(config, std::make_shared<DecodedWeights>(exported, config));
        const MatrixF want = test::jobModel(kPhi3, result).forward(sequence);
        const MatrixF got = readBack.forward(sequence);
        EXPECT_LT((got - want).cwiseAbs().maxCoeff(), c.tolerance * want.cwiseAbs().maxCoeff());
        fs::remove_all(dir);
    }
}

// NVFP4 gives each part its own global scale (gate and up differ); vLLM loads one per fused tensor:
// refused in one line, before anything is written.
TEST(Phi3Export, PartsThatCannotShareOneTensorAreRefusedInOneLine) {
    const MethodResult result = test::quantizeTiny(kPhi3, "nvfp4");
    const fs::path dir = fs::temp_directory_path() / ("qs_phi3_nvfp4_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    try {
        exportCheckpoint({kPhi3, dir, "ct-nvfp4", false, {}}, result, {}, CancelToken{});
        ADD_FAILURE() << "exported";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("cannot write model.layers.0."), std::string::npos) << what;
        EXPECT_NE(what.find("fused: its parts differ in NVFP4 global scale"), std::string::npos) << what;
        EXPECT_EQ(what.find('\n'), std::string::npos);
    }
    EXPECT_FALSE(fs::exists(dir));
}

// A result kept on disk (JobPlan::resultsOnDisk) writes the fused tensors from its parts read back a
// layer at a time, to the same bytes as the result in RAM: GPTQ, AWQ (the parts' row divisors inside
// the fused tensor), FP8 (per tensor: requantized to the largest scale) and a GGUF method's blocks.
TEST(Phi3Export, AResultOnDiskWritesTheSameFusedBytesAsInRam) {
    JobPlan plan;
    plan.checkpoint = kPhi3;
    plan.methods = parseMethodList("gptq4,awq4,fp8-tensor,q8_0", 16);
    plan.calibration = test::tinyTokens(kPhi3, 8, 64);
    const JobResult inRam = Job(plan).run({}, CancelToken{});
    const fs::path out = fs::temp_directory_path() / ("qs_phi3_disk_" + std::to_string(::getpid()));
    fs::remove_all(out);
    plan.workDir = out / "work";
    plan.resultsOnDisk = true;
    const JobResult onDisk = Job(plan).run({}, CancelToken{});
    const auto bytesOf = [](const fs::path& file) {
        std::ifstream in(file, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    };
    for (std::size_t m = 0; m < 3; ++m) {
        SCOPED_TRACE(inRam.methods[m].label());
        ASSERT_TRUE(inRam.methods[m].error.empty()) << inRam.methods[m].error;
        ASSERT_NE(onDisk.methods[m].stored, nullptr);
        const fs::path ram = out / (std::to_string(m) + "_ram"), disk = out / (std::to_string(m) + "_disk");
        (void)exportCheckpoint({kPhi3, ram, "", false, nlohmann::json::object()}, inRam.methods[m], {}, CancelToken{});
        (void)exportCheckpoint({kPhi3, disk, "", false, nlohmann::json::object()}, onDisk.methods[m], {},
                               CancelToken{});
        const io::Checkpoint exported = io::Checkpoint::open(disk);
        const std::string qkv = "model.layers.1.self_attn.qkv_proj.";
        EXPECT_TRUE(exported.find(qkv + "qweight") != nullptr || exported.find(qkv + "weight") != nullptr)
            << "written fused";
        for (const char* file : {"model.safetensors", "config.json"})
            EXPECT_TRUE(bytesOf(ram / file) == bytesOf(disk / file)) << file;
    }
    const io::Checkpoint source = io::Checkpoint::open(kPhi3);
    const fs::path ram = writeGgufResult(source, inRam.methods[3], out / "ram.gguf", {}, {}, CancelToken{});
    const fs::path disk = writeGgufResult(source, onDisk.methods[3], out / "disk.gguf", {}, {}, CancelToken{});
    EXPECT_TRUE(bytesOf(ram) == bytesOf(disk));
    WorkFolder::discard(plan.workDir);
    fs::remove_all(out);
}

// A GGUF method's result is written with the Job's own blocks, fused as llama.cpp's phi3 reads them:
// attn_qkv holds q's, k's and v's rows, ffn_up gate's then up's.
TEST(Phi3Export, GgufMethodWritesTheJobsBlocksFused) {
    const MethodResult result = test::quantizeTiny(kPhi3, "q8_0");
    const io::Checkpoint source = io::Checkpoint::open(kPhi3);
    const fs::path file = fs::temp_directory_path() / ("qs_phi3_q8_" + std::to_string(::getpid()) + ".gguf");
    fs::remove(file);
    writeGgufResult(source, result, file, {}, {}, CancelToken{});
    const io::Checkpoint gguf = io::Checkpoint::open(file);
    const io::GgufFile& g = *gguf.gguf();
    EXPECT_EQ(*g.metadata().string("general.architecture"), "phi3");
    for (const auto& [name, parts] :
         {std::pair<std::string, std::vector<std::string>>{
              "blk.1.attn_qkv.weight", {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"}},
          {"blk.1.ffn_up.weight", {"mlp.gate_proj", "mlp.up_proj"}}}) {
        SCOPED_TRACE(name);
        std::vector<std::uint8_t> want;
        for (const auto& part : parts) {
            const auto& blocks = result.layers[1].at(part)->blocks;
            want.insert(want.end(), blocks.begin(), blocks.end());
        }
        const auto* t = g.find(name);
        ASSERT_NE(t, nullptr);
        const auto stored = g.view(*t).bytes();
        ASSERT_EQ(stored.size(), want.size());
        EXPECT_EQ(std::memcmp(stored.data(), want.data(), want.size()), 0);
    }
    EXPECT_EQ(g.find("blk.1.attn_q.weight"), nullptr);
    EXPECT_EQ(g.find("blk.1.ffn_gate.weight"), nullptr);
    fs::remove(file);
}

// llama-quantize chooses Phi-3's fused tensors by their own names: attn_qkv follows attn_v's rules
// (category_is_attn_v), so in Q4_K_M it is Q6_K on the layers use_more_bits picks (layer 2 of 3; on these
// 64-wide rows its fallback Q8_0) and Q4_K elsewhere (here Q5_0); ffn_up is the base type (Q4_K, here
// Q5_0). The Job gives q, k, v the type of attn_qkv, so the file holds one type per fused tensor.
// (tests/interop checks these types against llama-quantize's own on this checkpoint.)
TEST(Phi3Export, GgufMixChoosesTheFusedTensorsTypes) {
    const MethodResult result = test::quantizeTiny(kPhi3, "q4_k_m");
    for (const char* part : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"}) {
        EXPECT_EQ(result.layers[1].at(part)->ggmlType, io::GgmlType::Q5_0) << part;
        EXPECT_EQ(result.layers[2].at(part)->ggmlType, io::GgmlType::Q8_0) << part;
    }
    for (const char* part : {"mlp.gate_proj", "mlp.up_proj", "self_attn.o_proj"})
        EXPECT_EQ(result.layers[1].at(part)->ggmlType, io::GgmlType::Q5_0) << part;
    const fs::path file = fs::temp_directory_path() / ("qs_phi3_q4km_" + std::to_string(::getpid()) + ".gguf");
    fs::remove(file);
    writeGgufResult(io::Checkpoint::open(kPhi3), result, file, {}, {}, CancelToken{});
    const io::Checkpoint gguf = io::Checkpoint::open(file);
    EXPECT_EQ(*gguf.gguf()->find("blk.1.attn_qkv.weight")->ggmlType, io::GgmlType::Q5_0);
    EXPECT_EQ(*gguf.gguf()->find("blk.2.attn_qkv.weight")->ggmlType, io::GgmlType::Q8_0);
    EXPECT_EQ(*gguf.gguf()->find("blk.1.ffn_up.weight")->ggmlType, io::GgmlType::Q5_0);
    fs::remove(file);
}

// A phi3 GGUF opens under Hugging Face's names (attn_qkv as qkv_proj, the fused ffn_up as gate_up_proj),
// which the model splits as it splits the checkpoint's (test_gguf_read_back runs it, LongRoPE included).
TEST(Phi3Export, GgufOpensWithFusedNames) {
    const fs::path file = fs::temp_directory_path() / ("qs_phi3_f32_" + std::to_string(::getpid()) + ".gguf");
    fs::remove(file);
    GgufExportOptions options;
    options.chooser = uniformGgufType(io::GgmlType::F32);
    writeGguf(io::Checkpoint::open(kPhi3), file, options, {}, CancelToken{});
    const io::Checkpoint gguf = io::Checkpoint::open(file);
    EXPECT_NE(gguf.find("model.layers.2.self_attn.qkv_proj.weight"), nullptr);
    EXPECT_NE(gguf.find("model.layers.2.mlp.gate_up_proj.weight"), nullptr);
    EXPECT_EQ(gguf.find("model.layers.2.mlp.up_proj.weight"), nullptr);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(gguf);
    EXPECT_EQ(config.arch.fusedGateUp, "mlp.gate_up_proj");
    EXPECT_EQ(config.arch.fusedQkv, "self_attn.qkv_proj");
    fs::remove(file);
}

// Before a run, the export check already names the fused tensor NVFP4 cannot write; GPTQ passes.
TEST(Phi3Export, TheCheckBeforeARunNamesTheFusedTensorNvfp4CannotWrite) {
    const io::Checkpoint source = io::Checkpoint::open(kPhi3);
    const MethodSpec nvfp4 = parseMethod("nvfp4", 16), gptq = parseMethod("gptq4", 16);
    const std::string why = exportRefusal(nvfp4, encoderForMethod(nvfp4, ""), source);
    EXPECT_NE(why.find("model.layers.0.mlp.gate_up_proj: the checkpoint stores its parts as one tensor"),
              std::string::npos)
        << why;
    EXPECT_EQ(exportRefusal(gptq, encoderForMethod(gptq, ""), source), "");
}
