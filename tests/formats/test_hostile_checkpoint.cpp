// Hostile checkpoints (issue 21): valid exports of the project's own encoders, mutated the way the
// catalogue mutated real ones, must be refused with a message that names the file and the key or
// tensor, never read as something else. One test per class of the catalogue: integers that do not
// fit, block sizes of zero, tensors a config promises but the checkpoint lacks, tensors no codec
// reads, swapped dtypes, configs without a usable quant_method, non-finite weights, and patterns
// that would backtrack forever.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>

#include <unistd.h>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/formats/linear_encoder.h"
#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint_writer.h"
#include "qs/io/dtype.h"
#include "qs/quant/fp8.h"
#include "qs/quant/gptq.h"
#include "qs/quant/mxfp4.h"
#include "qs/quant/nf4.h"
#include "qs/quant/nvfp4.h"
#include "qs/quant/rtn.h"

#include "encoder_test_weights.h"

namespace qs::formats::test {
namespace {

using testing::HasSubstr;

const std::string kPrefix = "model.layers.0.mlp.down_proj";

// An export held in memory, to be mutated, then written with io::CheckpointWriter and opened.
struct Export {
    std::vector<EncodedTensor> tensors;
    nlohmann::json config;
    std::vector<std::pair<std::string, nlohmann::json>> files;

    EncodedTensor& tensor(const std::string& name) {
        for (auto& t : tensors)
            if (t.name == name) return t;
        throw std::logic_error("no tensor " + name);
    }
    void remove(const std::string& name) {
        std::erase_if(tensors, [&](const EncodedTensor& t) { return t.name == name; });
    }
    nlohmann::json& quant() { return config["quantization_config"]; }
    template <typename T>
    void setValue(const std::string& name, std::size_t index, T value) {
        auto& t = tensor(name);
        std::memcpy(t.bytes.data() + index * sizeof(T), &value, sizeof(T));
    }
};

Export exportOf(std::string_view encoderName,
                const std::vector<std::pair<std::string, const quant::QuantizedLinear*>>& linears) {
    const auto& encoder = encoderNamed(encoderName);
    ExportScheme scheme;
    scheme.linears = linears;
    Export e;
    for (const auto& [prefix, q] : linears)
        for (auto& t : encoder.encode(prefix, *q)) e.tensors.push_back(std::move(t));
    e.config = {{"architectures", {"LlamaForCausalLM"}},
                {"model_type", "llama"},
                {"quantization_config", encoder.quantizationConfig(scheme)}};
    e.files = encoder.extraFiles(scheme);
    return e;
}

Export exportOf(std::string_view encoderName, const quant::QuantizedLinear& q) {
    return exportOf(encoderName, {{kPrefix, &q}});
}

class Written {
public:
    explicit Written(const Export& e)
        : dir_(std::filesystem::temp_directory_path() /
               ("qs_hostile_" + std::to_string(::getpid()) + "_" + std::to_string(next()))) {
        std::filesystem::remove_all(dir_);
        io::CheckpointWriter writer(dir_);
        for (const auto& t : e.tensors) writer.addTensor(t.name, t.dtype, t.shape, t.bytes);
        writer.setConfig(e.config);
        for (const auto& [name, content] : e.files) writer.addJsonFile(name, content);
        writer.finish();
        checkpoint_ = std::make_unique<io::Checkpoint>(io::Checkpoint::open(dir_));
    }
    ~Written() {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    const io::Checkpoint& checkpoint() const { return *checkpoint_; }
    const std::filesystem::path& dir() const { return dir_; }

private:
    static int next() {
        static int n = 0;
        return ++n;
    }
    std::filesystem::path dir_;
    std::unique_ptr<io::Checkpoint> checkpoint_;
};

// What decoding the linear says, "(decoded)" when it does not refuse.
std::string decodeError(const Export& e, const std::string& prefix = kPrefix, DecodeOptions options = {}) {
    const Written w(e);
    try {
        (void)LinearReader(w.checkpoint(), options).decode(prefix);
    } catch (const Error& err) {
        return err.what();
    }
    return "(decoded)";
}

quant::QuantizedLinear rtn4(bool sym = true, int groupSize = 64) {
    return quant::quantizeRtn(gaussianWeight(32, 128, 7u), {.bits = 4, .groupSize = groupSize, .sym = sym});
}

quant::QuantizedLinear gptqActOrder() {
    const MatrixF w = gaussianWeight(32, 128, 9u);
    MatrixF x = gaussianWeight(256, 128, 10u, 1.0f);
    for (Eigen::Index c = 0; c < x.cols(); ++c)
        x.col(c) *= 1.0f + 0.05f * static_cast<float>(c % 17);  // a column order to find
    const MatrixF h = 2.0f * x.transpose() * x / 256.0f;
    return quant::quantizeGptq(w, h, {.bits = 4, .groupSize = 32, .actOrder = true});
}

}  // namespace

// --- integers that do not fit -------------------------------------------------------------------

TEST(HostileCheckpoint, IntegersAreRangeCheckedAndIntegral) {
    const auto q = rtn4();
    const std::pair<const char*, nlohmann::json> cases[] = {
        {"bits", 4294967300ull}, {"group_size", 4294967360ull}, {"bits", 4.5}, {"group_size", 64.9}, {"bits", "four"}};
    for (const auto& [key, value] : cases) {
        auto e = exportOf("gptq", q);
        e.quant()[key] = value;
        const std::string error = decodeError(e);
        EXPECT_THAT(error, HasSubstr("config.json: quantization_config: '" + std::string(key) + "' is " + value.dump()))
            << value;
    }
    // Integral floats are integers.
    auto e = exportOf("gptq", q);
    e.quant()["group_size"] = 64.0;
    EXPECT_EQ(decodeError(e), "(decoded)");
}

TEST(HostileCheckpoint, Fp8BlockSizeIsRangeChecked) {
    auto e = exportOf("fp8", quant::quantizeFp8(gaussianWeight(256, 256, 3u)));
    ASSERT_TRUE(e.quant().contains("weight_block_size"));
    e.quant()["weight_block_size"] = {4294967424ull, 128};
    EXPECT_THAT(decodeError(e),
                HasSubstr("'weight_block_size'[0] is 4294967424, expected an integer from 1 to 1048576"));
    e.quant()["weight_block_size"] = {0, 128};
    EXPECT_THAT(decodeError(e), HasSubstr("'weight_block_size'[0] is 0"));
}

TEST(HostileCheckpoint, BnbBlocksizeIsRangeChecked) {
    auto e =
        exportOf("bnb-nf4", quant::quantizeNf4(gaussianWeight(8, 128, 5u), {.blockSize = 64, .doubleQuant = false}));
    const std::string stateName = kPrefix + ".weight.quant_state.bitsandbytes__nf4";
    auto& state = e.tensor(stateName);
    nlohmann::json j =
        nlohmann::json::parse(std::string(reinterpret_cast<const char*>(state.bytes.data()), state.bytes.size()));
    j["blocksize"] = (1ull << 32) + 64;
    const std::string text = j.dump();
    state.bytes.assign(reinterpret_cast<const std::byte*>(text.data()),
                       reinterpret_cast<const std::byte*>(text.data() + text.size()));
    state.shape = {static_cast<std::int64_t>(text.size())};
    EXPECT_THAT(decodeError(e), HasSubstr("quant_state.bitsandbytes__nf4': 'blocksize' is 4294967360"));
}

// --- compressed-tensors scale layouts (SIGFPE on a zero block) -----------------------------------

TEST(HostileCheckpoint, ZeroBlockStructureIsRefusedNotDividedBy) {
    for (const nlohmann::json& block : {nlohmann::json{0, 0}, nlohmann::json{0, 128}, nlohmann::json{128, 0}}) {
        auto e =
            exportOf("ct-fp8-dynamic", quant::quantizeFp8(gaussianWeight(64, 128, 4u), quant::Fp8Scaling::PerChannel));
        auto& weights = e.quant()["config_groups"]["group_0"]["weights"];
        weights["strategy"] = "block";
        weights["block_structure"] = block;
        const std::string error = decodeError(e);
        EXPECT_THAT(error, HasSubstr("config_groups.group_0.weights: 'block_structure'")) << block;
        EXPECT_THAT(error, HasSubstr("expected an integer from 1")) << block;
        // describe() (inspect) says the same instead of crashing.
        const Written w(e);
        const auto info = detect(w.checkpoint());
        ASSERT_EQ(info.layers.size(), 1u);
        EXPECT_THAT(info.layers[0].problem, HasSubstr("'block_structure'"));
    }
}

TEST(HostileCheckpoint, BlockStrategyNeedsBlockStructureInEveryLayout) {
    // One scale hint for every layout: compressed-tensors' QuantizationArgs refuses strategy "block"
    // without block_structure, so the FP8 path no longer assumes 128x128 where pack-quantized refused.
    auto fp8 =
        exportOf("ct-fp8-dynamic", quant::quantizeFp8(gaussianWeight(64, 128, 4u), quant::Fp8Scaling::PerChannel));
    fp8.quant()["config_groups"]["group_0"]["weights"]["strategy"] = "block";
    const auto intQ = rtn4(true, 32);
    auto packed = exportOf("ct-mixed", intQ);
    packed.quant()["config_groups"]["group_0"]["weights"]["strategy"] = "block";
    packed.quant()["config_groups"]["group_0"]["weights"]["group_size"] = nullptr;
    for (const Export* e : {&fp8, &packed})
        EXPECT_THAT(decodeError(*e), HasSubstr("weights: strategy 'block' needs 'block_structure'"));
    // And a block_structure under another strategy contradicts it.
    fp8.quant()["config_groups"]["group_0"]["weights"]["strategy"] = "channel";
    fp8.quant()["config_groups"]["group_0"]["weights"]["block_structure"] = {128, 128};
    EXPECT_THAT(decodeError(fp8), HasSubstr("'block_structure' needs strategy 'block'"));
}

// --- tensors a config promises ---------------------------------------------------------------------

TEST(HostileCheckpoint, ActOrderWithoutItsPermutationIsRefused) {
    const auto q = gptqActOrder();
    ASSERT_FALSE(q.gIdx.empty());
    auto gptq = exportOf("gptq", q);
    ASSERT_TRUE(gptq.quant().at("desc_act").get<bool>());
    EXPECT_EQ(decodeError(gptq), "(decoded)");
    gptq.remove(kPrefix + ".g_idx");
    EXPECT_THAT(decodeError(gptq), HasSubstr("tensor '" + kPrefix + ".g_idx' is missing (the config's desc_act"));

    auto ct = exportOf("ct-mixed", q);
    EXPECT_EQ(decodeError(ct), "(decoded)");
    ct.remove(kPrefix + ".weight_g_idx");
    EXPECT_THAT(decodeError(ct), HasSubstr("weight_g_idx' is missing (the config's actorder 'group'"));
}

TEST(HostileCheckpoint, NestedOffsetIsNotGuessed) {
    auto e = exportOf("bnb-nf4", quant::quantizeNf4(gaussianWeight(24, 256, 31u)));
    const std::string stateName = kPrefix + ".weight.quant_state.bitsandbytes__nf4";
    auto& state = e.tensor(stateName);
    nlohmann::json j =
        nlohmann::json::parse(std::string(reinterpret_cast<const char*>(state.bytes.data()), state.bytes.size()));
    ASSERT_TRUE(j.contains("nested_offset"));
    j.erase("nested_offset");
    const std::string text = j.dump();
    state.bytes.assign(reinterpret_cast<const std::byte*>(text.data()),
                       reinterpret_cast<const std::byte*>(text.data() + text.size()));
    state.shape = {static_cast<std::int64_t>(text.size())};
    EXPECT_THAT(decodeError(e), HasSubstr("needs a finite 'nested_offset'"));
}

TEST(HostileCheckpoint, LinearWithoutItsMainTensorIsRefused) {
    const auto a = rtn4(), b = rtn4();
    const std::string other = "model.layers.0.mlp.up_proj";
    auto gptq = exportOf("gptq", {{kPrefix, &a}, {other, &b}});
    gptq.remove(kPrefix + ".qweight");
    {
        const Written w(gptq);
        const auto info = detect(w.checkpoint());
        EXPECT_FALSE(info.decodable);
        EXPECT_THAT(info.whyNot, HasSubstr("tensor '" + kPrefix +
                                           ".g_idx' is part of a quantized linear that the gptq reader does not read"));
        EXPECT_THROW((void)LinearReader(w.checkpoint()).decode(other),
                     Error);  // nothing of a half-read checkpoint is decoded
    }
    auto bnb = exportOf("bnb-nf4", quant::quantizeNf4(gaussianWeight(8, 128, 5u)));
    bnb.remove(kPrefix + ".weight.quant_state.bitsandbytes__nf4");
    const Written w(bnb);
    const auto info = detect(w.checkpoint());
    EXPECT_FALSE(info.decodable);
    EXPECT_THAT(info.whyNot, HasSubstr("tensor '" + kPrefix +
                                       ".weight' (U8) is a weight that the bitsandbytes reader does not read"));
}

TEST(HostileCheckpoint, NumBitsThatContradictThePackedTensorsAreRefused) {
    auto e = exportOf("ct-mixed", rtn4(true, 32));
    e.quant()["config_groups"]["group_0"]["weights"]["num_bits"] = 8;
    EXPECT_THAT(decodeError(e), HasSubstr("weight_packed': shape [32, 16] cannot hold 128 8-bit values per line"));
}

// --- swapped dtypes ---------------------------------------------------------------------------------

TEST(HostileCheckpoint, DtypeSwapsAreRefused) {
    auto scaleAsInt =
        exportOf("ct-fp8-dynamic", quant::quantizeFp8(gaussianWeight(64, 128, 4u), quant::Fp8Scaling::PerChannel));
    auto& scale = scaleAsInt.tensor(kPrefix + ".weight_scale");
    ASSERT_EQ(scale.dtype, io::DType::F32);
    scale.dtype = io::DType::I32;  // the same bytes, reinterpreted
    EXPECT_THAT(decodeError(scaleAsInt), HasSubstr("weight_scale': dtype I32, expected F32 or F16 or BF16"));

    // The same bytes read as another dtype of the same width, under scales and lookup tables.
    auto global = exportOf("ct-nvfp4", quant::quantizeNvfp4(powerOfTwoGlobalWeight(16, 64, 8u)));
    global.tensor(kPrefix + ".weight_global_scale").dtype = io::DType::I32;
    EXPECT_THAT(decodeError(global), HasSubstr("weight_global_scale': dtype I32, expected F32 or F16 or BF16"));
    auto map = exportOf("bnb-nf4", quant::quantizeNf4(gaussianWeight(16, 128, 3u)));
    map.tensor(kPrefix + ".weight.quant_map").dtype = io::DType::U32;
    EXPECT_THAT(decodeError(map), HasSubstr("weight.quant_map': dtype U32, expected F32 or F16 or BF16"));
    auto fp8AsInt =
        exportOf("ct-fp8-dynamic", quant::quantizeFp8(gaussianWeight(64, 128, 4u), quant::Fp8Scaling::PerChannel));
    fp8AsInt.tensor(kPrefix + ".weight").dtype = io::DType::I8;
    EXPECT_THAT(decodeError(fp8AsInt),
                HasSubstr("is stored as integer 8-bit codes, but its config group says type 'float', num_bits 8"));

    for (const io::DType swapped : {io::DType::F8_E5M2, io::DType::U8}) {
        auto e = exportOf("fp8", quant::quantizeFp8(gaussianWeight(256, 256, 3u)));
        e.tensor(kPrefix + ".weight").dtype = swapped;
        const Written w(e);
        const auto info = detect(w.checkpoint());
        EXPECT_FALSE(info.decodable) << io::dtypeName(swapped);
        EXPECT_THAT(info.whyNot, HasSubstr("tensor '" + kPrefix + ".weight' (" + std::string(io::dtypeName(swapped)) +
                                           ") is a weight that the fp8 reader does not read"))
            << io::dtypeName(swapped);
    }
}

// --- configs without a usable quant_method ----------------------------------------------------------

TEST(HostileCheckpoint, AConfigThatIsPresentIsNeverGuessedOver) {
    const auto q = rtn4(false);  // asymmetric: read as v1 symmetric, every zero point is off by one
    auto reference = exportOf("gptq_v2", q);
    ASSERT_EQ(reference.quant().at("checkpoint_format"), "gptq_v2");
    EXPECT_EQ(decodeError(reference), "(decoded)");
    for (const nlohmann::json& method : {nlohmann::json(), nlohmann::json(""), nlohmann::json(42)}) {
        auto e = reference;
        if (method.is_null())
            e.quant().erase("quant_method");
        else
            e.quant()["quant_method"] = method;
        const Written w(e);
        const auto info = detect(w.checkpoint());
        EXPECT_FALSE(info.decodable) << method;
        EXPECT_TRUE(info.layers.empty()) << method;  // nothing described as "sym"
        EXPECT_THAT(info.whyNot, HasSubstr("config.json: quantization_config")) << method;
        EXPECT_THAT(info.whyNot, HasSubstr("'quant_method'")) << method;
        EXPECT_THROW((void)LinearReader(w.checkpoint()).decode(kPrefix), Error) << method;
    }
}

TEST(HostileCheckpoint, AQuantMethodOfAnotherFormatOverGptqTensorsIsRefused) {
    for (const char* method : {"fp8", "awq", "compressed-tensors", "bitsandbytes"}) {
        auto e = exportOf("gptq", rtn4());
        e.quant()["quant_method"] = method;
        const Written w(e);
        const auto info = detect(w.checkpoint());
        EXPECT_FALSE(info.decodable) << method;
        EXPECT_THAT(info.whyNot,
                    HasSubstr("config.json: quantization_config says quant_method '" + std::string(method) + "'"))
            << method;
        EXPECT_TRUE(info.layers.empty()) << method;
    }
}

// --- non-finite weights ----------------------------------------------------------------------------

TEST(HostileCheckpoint, NonFiniteWeightsAreRefusedUnlessAllowed) {
    const auto fp8 = quant::quantizeFp8(gaussianWeight(256, 256, 3u));
    struct Case {
        std::string what;
        std::function<void(Export&)> mutate;
        std::int64_t count;
    };
    const std::string scaleInv = kPrefix + ".weight_scale_inv";
    const std::vector<Case> cases = {
        {"one NaN block scale", [&](Export& e) { e.setValue<float>(scaleInv, 1, std::nanf("")); }, 128 * 128},
        {"every scale Inf",
         [&](Export& e) {
             for (std::size_t i = 0; i < 4; ++i) e.setValue<float>(scaleInv, i, INFINITY);
         },
         0},
        {"3e38 scales",
         [&](Export& e) {
             for (std::size_t i = 0; i < 4; ++i) e.setValue<float>(scaleInv, i, 3e38f);
         },
         0},
        {"an E4M3 NaN code", [&](Export& e) { e.setValue<std::uint8_t>(kPrefix + ".weight", 5, 0x7F); }, 1},
    };
    for (const auto& c : cases) {
        auto e = exportOf("fp8", fp8);
        c.mutate(e);
        const std::string error = decodeError(e);
        EXPECT_THAT(error, HasSubstr("linear '" + kPrefix + "' decodes to ")) << c.what;
        EXPECT_THAT(error, HasSubstr("non-finite weights (NaN or Inf) of 65536")) << c.what;
        if (c.count > 0) {
            EXPECT_THAT(error, HasSubstr("decodes to " + std::to_string(c.count) + " non-finite")) << c.what;
        }
        EXPECT_EQ(decodeError(e, kPrefix, {.allowNonFinite = true}), "(decoded)") << c.what;
    }
}

TEST(HostileCheckpoint, NonFiniteFloatFormatScalesAreRefused) {
    auto mx = exportOf("ct-mxfp4", quant::quantizeMxfp4(gaussianWeight(16, 64, 6u)));
    mx.setValue<std::uint8_t>(kPrefix + ".weight_scale", 0, 0xFF);  // E8M0 NaN
    EXPECT_THAT(decodeError(mx), HasSubstr("decodes to 32 non-finite weights"));

    for (const float global : {0.0f, INFINITY, std::nanf("")}) {
        auto nv = exportOf("ct-nvfp4", quant::quantizeNvfp4(powerOfTwoGlobalWeight(16, 64, 8u)));
        nv.setValue<float>(kPrefix + ".weight_global_scale", 0, global);
        EXPECT_THAT(decodeError(nv), HasSubstr("weight_global_scale': is ")) << global;
    }
}

// --- patterns from the config ------------------------------------------------------------------------

TEST(HostileCheckpoint, ConfigPatternsCannotHangOrCrash) {
    const auto q = rtn4();
    const std::vector<std::string> hanging = {"(.*)*X", "(.|.)*X", "(.|.)*0\\.mlp\\.down_proj$x"};
    for (const auto& pattern : hanging) {
        auto e = exportOf("gptq", q);
        e.quant()["dynamic"] = {{pattern, {{"bits", 8}}}};
        const auto start = std::chrono::steady_clock::now();
        const std::string error = decodeError(e);
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0) << pattern;
        if (error != "(decoded)") {
            EXPECT_THAT(error, HasSubstr("backtracks past QuantScope's limits")) << pattern;
        }
    }
    auto deep = exportOf("gptq", q);
    deep.quant()["dynamic"] = {{std::string(50'000, '(') + "x" + std::string(50'000, ')'), {{"bits", 8}}}};
    const std::string error = decodeError(deep);
    EXPECT_THAT(error, HasSubstr("config.json: quantization_config: module pattern: pattern '((((("));
    EXPECT_LE(error.size(), kMaxMessageBytes);

    auto ct =
        exportOf("ct-fp8-dynamic", quant::quantizeFp8(gaussianWeight(64, 128, 4u), quant::Fp8Scaling::PerChannel));
    auto groups = ct.quant()["config_groups"];
    groups["group_1"] = groups["group_0"];
    groups["group_0"]["targets"] = {"re:(.|.)*X"};
    groups["group_1"]["targets"] = {"re:(a|a)*b"};
    ct.quant()["config_groups"] = groups;
    const auto start = std::chrono::steady_clock::now();
    (void)decodeError(ct);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
}

// --- silent acceptances of the catalogue (issue 39): each gets one line ----------------------------

// A dense weight beside GPTQ's qweight: which one would a loader use? Neither is read.
TEST(HostileCheckpoint, ADenseWeightBesideQuantizedPartsIsRefused) {
    auto e = exportOf("gptq", rtn4());
    e.tensors.push_back({kPrefix + ".weight", io::DType::F16, {32, 128}, std::vector<std::byte>(32 * 128 * 2)});
    const Written w(e);
    const FormatInfo info = detect(w.checkpoint());
    EXPECT_FALSE(info.decodable);
    EXPECT_THAT(info.whyNot,
                HasSubstr(kPrefix + " has both a dense 'weight' (F16) and the gptq parts of a quantized linear"));
}

// A bitsandbytes config over tensors of the other width is a model transformers cannot load.
TEST(HostileCheckpoint, ABitsandbytesConfigOfTheOtherWidthIsRefused) {
    auto e = exportOf("bnb-nf4", quant::quantizeNf4(gaussianWeight(8, 128, 5u)));
    e.quant()["load_in_8bit"] = true;
    e.quant()["load_in_4bit"] = false;
    const Written w(e);
    const FormatInfo info = detect(w.checkpoint());
    EXPECT_FALSE(info.decodable);
    EXPECT_THAT(
        info.whyNot,
        HasSubstr(
            "quantization_config says load_in_8bit, but the tensors hold bitsandbytes nf4 4-bit codes (quant_state)"));
}

// A 4-bit type the quant_state overrides: transformers goes on with the quant_state's, and so do we,
// saying so. The same with a real type that disagrees; silent when the config leaves the key out.
TEST(HostileCheckpoint, ABitsandbytesTypeTheQuantStateOverridesIsAWarning) {
    const auto q = quant::quantizeNf4(gaussianWeight(8, 128, 5u));
    auto e = exportOf("bnb-nf4", q);
    const MatrixF expected = q.dequantize();
    for (const char* type : {"int3", "fp4"}) {
        SCOPED_TRACE(type);
        e.quant()["bnb_4bit_quant_type"] = type;
        const Written w(e);
        const FormatInfo info = detect(w.checkpoint());
        EXPECT_TRUE(info.decodable) << info.whyNot;
        EXPECT_EQ(info.variant, "nf4");
        ASSERT_EQ(info.warnings.size(), 1u);
        EXPECT_THAT(info.warnings[0], HasSubstr(std::string("bnb_4bit_quant_type '") + type + "' "));
        EXPECT_THAT(info.warnings[0], HasSubstr("their quant_state says 'nf4', which decides"));
        EXPECT_EQ(LinearReader(w.checkpoint()).decode(kPrefix).weight, expected);
    }
    EXPECT_THAT(detect(Written(e).checkpoint()).warnings.front(), HasSubstr("disagrees with the tensors"));
    e.quant().erase("bnb_4bit_quant_type");
    EXPECT_TRUE(detect(Written(e).checkpoint()).warnings.empty());
}

// Names that look like a decoder layer's but name none: a loader leaves them unused. One line.
TEST(HostileCheckpoint, TensorsThatNameNoLayerAreAWarning) {
    auto e = exportOf("gptq", rtn4());
    for (const char* name : {"model.layers.-1.mlp.down_proj.weight", "model.layers.99999999999.mlp.up_proj.weight"})
        e.tensors.push_back({name, io::DType::F16, {4, 4}, std::vector<std::byte>(32)});
    const Written w(e);
    const FormatInfo info = detect(w.checkpoint());
    EXPECT_TRUE(info.decodable) << info.whyNot;
    ASSERT_EQ(info.warnings.size(), 1u);
    EXPECT_THAT(info.warnings[0],
                HasSubstr("tensor 'model.layers.-1.mlp.down_proj.weight' and 1 more name no decoder layer"));
    EXPECT_THAT(info.warnings[0], HasSubstr("a loader leaves them unused"));
    EXPECT_TRUE(detect(Written(exportOf("gptq", rtn4())).checkpoint()).warnings.empty());
    e.remove("model.layers.99999999999.mlp.up_proj.weight");
    EXPECT_THAT(
        detect(Written(e).checkpoint()).warnings.at(0),
        HasSubstr(
            "tensor 'model.layers.-1.mlp.down_proj.weight' names no decoder layer (a layer index is 0 to 999999); "
            "a loader leaves it unused"));
}

}  // namespace qs::formats::test
