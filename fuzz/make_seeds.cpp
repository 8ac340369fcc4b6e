// Writes the seed corpora of the structured fuzz targets (fuzz_support.h sections): for
// checkpoint_folder one small export per encoder of the project (every codec's happy path), a
// dense Llama, and the regression cases of issue 21 in miniature; for tokenizer_json a few
// tokenizer.json files covering the model, normalizer, pre-tokenizer, decoder and added-token kinds.
//   fuzz_make_seeds <fuzz/corpus folder>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "qs/formats/linear_encoder.h"
#include "qs/quant/fp8.h"
#include "qs/quant/mxfp4.h"
#include "qs/quant/nf4.h"
#include "qs/quant/nvfp4.h"
#include "qs/quant/rtn.h"
#include "qs/quant/trellis.h"

#include "fuzz_support.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using qs::formats::EncodedTensor;

struct Folder {
    json config;
    std::string sideName;
    json side;
    std::vector<EncodedTensor> tensors;
};

std::string serialise(const Folder& f) {
    json header = json::object();
    std::string data;
    for (const auto& t : f.tensors) {
        const auto begin = data.size();
        data.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
        header[t.name] = {{"dtype", std::string(qs::io::dtypeName(t.dtype))},
                          {"shape", t.shape},
                          {"data_offsets", {begin, data.size()}}};
    }
    const std::string marker(qs::fuzz::kSectionMarker);
    return (f.config.is_null() ? std::string() : f.config.dump()) + marker +
           (f.sideName.empty() ? std::string() : f.sideName + "\n" + f.side.dump()) + marker + header.dump() + marker +
           data;
}

void save(const fs::path& dir, const std::string& name, const std::string& bytes) {
    fs::create_directories(dir);
    std::ofstream(dir / name, std::ios::binary) << bytes;
    std::printf("%s/%s: %zu bytes\n", dir.c_str(), name.c_str(), bytes.size());
}

qs::MatrixF weight(std::int64_t rows, std::int64_t cols, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    qs::MatrixF w(rows, cols);
    for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = normal(rng);
    return w;
}

EncodedTensor bf16(const std::string& name, std::vector<std::int64_t> shape) {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    EncodedTensor t{name, qs::io::DType::BF16, std::move(shape),
                    std::vector<std::byte>(static_cast<std::size_t>(n) * 2)};
    for (std::size_t i = 0; i < t.bytes.size(); i += 2) t.bytes[i + 1] = std::byte{0x3C};  // 0.0078125
    return t;
}

Folder exportOf(const std::string& encoderName, const qs::quant::QuantizedLinear& q) {
    const auto& encoder = qs::formats::encoderNamed(encoderName);
    const std::string prefix = "model.layers.0.mlp.down_proj";
    qs::formats::ExportScheme scheme;
    scheme.linears = {{prefix, &q}};
    scheme.denseLinears = {"lm_head"};
    Folder f;
    f.tensors = encoder.encode(prefix, q);
    f.tensors.push_back(bf16("lm_head.weight", {8, q.cols}));
    f.config = {{"architectures", {"LlamaForCausalLM"}},
                {"model_type", "llama"},
                {"quantization_config", encoder.quantizationConfig(scheme)}};
    if (const auto files = encoder.extraFiles(scheme); !files.empty())
        f.sideName = files.front().first, f.side = files.front().second;
    return f;
}

Folder denseLlama() {
    Folder f;
    const int h = 16, ff = 32, vocab = 24;
    f.config = {{"architectures", {"LlamaForCausalLM"}},
                {"model_type", "llama"},
                {"hidden_size", h},
                {"intermediate_size", ff},
                {"num_hidden_layers", 1},
                {"num_attention_heads", 2},
                {"num_key_value_heads", 1},
                {"vocab_size", vocab},
                {"rms_norm_eps", 1e-6},
                {"rope_theta", 10000.0},
                {"tie_word_embeddings", false}};
    f.tensors = {bf16("model.embed_tokens.weight", {vocab, h}),
                 bf16("model.norm.weight", {h}),
                 bf16("lm_head.weight", {vocab, h}),
                 bf16("model.layers.0.input_layernorm.weight", {h}),
                 bf16("model.layers.0.post_attention_layernorm.weight", {h}),
                 bf16("model.layers.0.self_attn.q_proj.weight", {h, h}),
                 bf16("model.layers.0.self_attn.k_proj.weight", {8, h}),
                 bf16("model.layers.0.self_attn.v_proj.weight", {8, h}),
                 bf16("model.layers.0.self_attn.o_proj.weight", {h, h}),
                 bf16("model.layers.0.mlp.gate_proj.weight", {ff, h}),
                 bf16("model.layers.0.mlp.up_proj.weight", {ff, h}),
                 bf16("model.layers.0.mlp.down_proj.weight", {h, ff})};
    return f;
}

void checkpointSeeds(const fs::path& dir) {
    using namespace qs::quant;
    const auto w = weight(32, 64, 1u);
    const auto rtnSym = quantizeRtn(w, {.bits = 4, .groupSize = 32, .sym = true});
    const auto rtnAsym = quantizeRtn(w, {.bits = 4, .groupSize = 32, .sym = false});
    const auto rtn8 = quantizeRtn(w, {.bits = 8, .groupSize = -1, .sym = true});
    auto awq = rtnAsym;  // the AWQ layout holds any asymmetric 4-bit grid
    awq.method = Method::Awq;
    const auto fp8Block = quantizeFp8(weight(160, 192, 2u), Fp8Scaling::Block, 128);
    const auto fp8Channel = quantizeFp8(w, Fp8Scaling::PerChannel);
    const auto nvfp4 = quantizeNvfp4(w);
    const auto mxfp4 = quantizeMxfp4(w);
    const auto nf4 = quantizeNf4(weight(16, 128, 3u));
    const auto nf4Plain = quantizeNf4(weight(16, 128, 3u), {.blockSize = 32, .doubleQuant = false});
    const auto trellis = quantizeTrellis(weight(8, 64, 4u), {.L = 8, .K = 2, .groupSize = 32});
    const std::vector<std::pair<std::string, const QuantizedLinear*>> exports = {
        {"gptq", &rtnSym},    {"gptq_v2", &rtnAsym},      {"gptq", &rtn8},
        {"awq", &awq},        {"fp8", &fp8Block},         {"ct-fp8-dynamic", &fp8Channel},
        {"ct-nvfp4", &nvfp4}, {"modelopt-nvfp4", &nvfp4}, {"ct-mxfp4", &mxfp4},
        {"bnb-nf4", &nf4},    {"bnb-nf4", &nf4Plain},     {"ct-mixed", &rtnAsym},
        {"ct-mixed", &nvfp4}, {"ct-mixed", &fp8Channel},  {"quantscope-trellis", &trellis}};
    int n = 0;
    for (const auto& [name, q] : exports) {
        if (const auto why = qs::formats::encoderNamed(name).refusal(*q); !why.empty()) {
            std::printf("skipped %s: %s\n", name.c_str(), why.c_str());
            continue;
        }
        save(dir, std::to_string(n++) + "_" + name + ".seed", serialise(exportOf(name, *q)));
    }
    save(dir, "dense_llama.seed", serialise(denseLlama()));

    // Issue 19: static input scales as the W8A8 and W4A4 layouts store them.
    auto fp8Tensor = quantizeFp8(w, Fp8Scaling::PerTensor);
    fp8Tensor.input = {ActivationFormat::Fp8Tensor, 0.0125f};
    auto nvfp4W4a4 = nvfp4;
    nvfp4W4a4.input = {ActivationFormat::Nvfp4, 0.002f};
    for (const auto& [name, q] :
         std::vector<std::pair<std::string, const QuantizedLinear*>>{{"fp8", &fp8Tensor},
                                                                     {"ct-fp8", &fp8Tensor},
                                                                     {"modelopt-fp8", &fp8Tensor},
                                                                     {"ct-nvfp4", &nvfp4W4a4},
                                                                     {"modelopt-nvfp4", &nvfp4W4a4}})
        save(dir, "issue19_" + name + "_inputs.seed", serialise(exportOf(name, *q)));

    // The classes of issue 21, small enough to mutate from.
    const auto mutated = [&](const std::string& name, const std::string& encoder, const QuantizedLinear& q,
                             const std::function<void(Folder&)>& change) {
        Folder f = exportOf(encoder, q);
        change(f);
        save(dir, "issue21_" + name + ".seed", serialise(f));
    };
    mutated("bits_past_32_bits", "gptq", rtnSym,
            [](Folder& f) { f.config["quantization_config"]["bits"] = 4294967300ull; });
    mutated("fractional_group", "gptq", rtnSym,
            [](Folder& f) { f.config["quantization_config"]["group_size"] = 64.9; });
    mutated("no_quant_method", "gptq_v2", rtnAsym,
            [](Folder& f) { f.config["quantization_config"].erase("quant_method"); });
    mutated("other_quant_method", "gptq", rtnSym,
            [](Folder& f) { f.config["quantization_config"]["quant_method"] = "fp8"; });
    mutated("zero_block", "ct-fp8-dynamic", fp8Channel, [](Folder& f) {
        auto& weights = f.config["quantization_config"]["config_groups"]["group_0"]["weights"];
        weights["strategy"] = "block";
        weights["block_structure"] = {0, 128};
    });
    mutated("catastrophic_dynamic", "gptq", rtnSym, [](Folder& f) {
        f.config["quantization_config"]["dynamic"] = {{"(a|a)*b", {{"bits", 8}}}};
    });
    mutated("deep_config", "gptq", rtnSym, [](Folder& f) {
        json deep = 1;
        for (int i = 0; i < 60; ++i) deep = json::array({deep});
        f.config["extra"] = deep;
    });
    mutated("e5m2_weight", "fp8", fp8Block, [](Folder& f) {
        for (auto& t : f.tensors)
            if (t.name.ends_with(".weight") && t.dtype == qs::io::DType::F8_E4M3) t.dtype = qs::io::DType::F8_E5M2;
    });
}

json byteLevelTokenizer(bool withRegexNormalizer) {
    json vocab = json::object();
    // The GPT-2 byte-to-unicode map for printable ASCII is the identity; a few merges on top.
    for (int c = 33; c < 127; ++c) vocab[std::string(1, static_cast<char>(c))] = c - 33;
    vocab["\xC4\xA0"] = 94;  // "Ġ", the space
    vocab["th"] = 95;
    vocab["the"] = 96;
    vocab["\xC4\xA0the"] = 97;
    json tokenizer = {
        {"version", "1.0"},
        {"model",
         {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"t h", "th e", "\xC4\xA0 the"}}, {"byte_fallback", false}}},
        {"added_tokens",
         {{{"id", 98},
           {"content", "<|end|>"},
           {"special", true},
           {"normalized", false},
           {"lstrip", false},
           {"rstrip", false},
           {"single_word", false}}}},
        {"pre_tokenizer",
         {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
        {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
        {"normalizer", nullptr},
        {"post_processor", nullptr}};
    if (withRegexNormalizer) {
        tokenizer["normalizer"] = {
            {"type", "Sequence"},
            {"normalizers",
             {{{"type", "NFC"}}, {{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}}}}};
        tokenizer["pre_tokenizer"] = {
            {"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern", {{"Regex", "(?i:'s|'t)|\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}};
    }
    return tokenizer;
}

json metaspaceTokenizer() {
    json vocab = {{"<unk>", 0},
                  {"<s>", 1},
                  {"</s>", 2},
                  {"\xE2\x96\x81", 3},
                  {"a", 4},
                  {"b", 5},
                  {"\xE2\x96\x81"
                   "a",
                   6},
                  {"ab", 7}};
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        vocab[name] = 8 + b;
    }
    return {{"version", "1.0"},
            {"model",
             {{"type", "BPE"},
              {"vocab", vocab},
              {"merges", {"\xE2\x96\x81 a", "a b"}},
              {"byte_fallback", true},
              {"unk_token", "<unk>"},
              {"fuse_unk", true}}},
            {"added_tokens",
             {{{"id", 1},
               {"content", "<s>"},
               {"special", true},
               {"normalized", false},
               {"lstrip", false},
               {"rstrip", false},
               {"single_word", false}}}},
            {"normalizer",
             {{"type", "Sequence"},
              {"normalizers",
               {{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
                {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}}}}},
            {"pre_tokenizer", nullptr},
            {"decoder",
             {{"type", "Sequence"},
              {"decoders",
               {{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
                {{"type", "ByteFallback"}},
                {{"type", "Fuse"}},
                {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
            {"post_processor",
             {{"type", "TemplateProcessing"},
              {"single",
               {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
              {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}}};
}

void tokenizerSeeds(const fs::path& dir, const fs::path& demoTokenizer) {
    const std::string marker(qs::fuzz::kSectionMarker);
    const std::string config = R"({"bos_token":"<s>","eos_token":"</s>","add_bos_token":true})";
    const std::string text = "Hello, world! The theme's 123 4567 h\xC3\xA9llo <|end|> ab ab\n\tend";
    save(dir, "byte_level.seed", byteLevelTokenizer(false).dump() + marker + marker + text);
    save(dir, "byte_level_regex.seed", byteLevelTokenizer(true).dump() + marker + marker + text);
    save(dir, "metaspace_byte_fallback.seed",
         metaspaceTokenizer().dump() + marker + config + marker + "ab a b \xE2\x82\xAC z");
    std::ifstream in(demoTokenizer, std::ios::binary);
    const std::string demo{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (!demo.empty()) save(dir, "demo.seed", demo + marker + marker + text);
    json catastrophic = byteLevelTokenizer(false);
    catastrophic["pre_tokenizer"] = {
        {"type", "Split"}, {"pattern", {{"Regex", "(a|a)*b"}}}, {"behavior", "Isolated"}, {"invert", false}};
    save(dir, "issue21_catastrophic_split.seed", catastrophic.dump() + marker + marker + std::string(40, 'a') + "cb");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: fuzz_make_seeds <fuzz/corpus folder> <demo tokenizer.json>\n");
        return 2;
    }
    checkpointSeeds(fs::path(argv[1]) / "checkpoint_folder");
    tokenizerSeeds(fs::path(argv[1]) / "tokenizer_json", argv[2]);
    return 0;
}
