// Format detection: the quantization config decides when there is one (its quant_method and layout
// keys); otherwise the tensor names do (qweight + g_idx -> GPTQ, weight_scale_inv -> FP8, ...).
#include "qs/formats/detect.h"

#include <set>

#include "qs/error.h"
#include "qs/formats/linear_reader.h"
#include "qs/io/dtype.h"
#include "qs/io/gguf_names.h"
#include "qs/io/llama_ftype.h"

#include "codecs.h"
#include "quant_config.h"
#include "tensor_access.h"

namespace qs::formats {

namespace {

using detail::jsonBool;
using detail::jsonInt;
using detail::jsonString;
using detail::lowerCase;

void refuse(FormatInfo& info, std::string why) {
    info.decodable = false;
    info.whyNot = std::move(why);
}

void classifyGptq(FormatInfo& info) {
    const auto& c = info.config;
    info.format = Format::Gptq;
    info.variant = lowerCase(jsonString(c, "checkpoint_format", jsonString(c, "format", "gptq")));
    if (jsonBool(c, "is_marlin_format", false)) info.variant = "marlin";
    if (info.variant != "gptq" && info.variant != "gptq_v2")
        refuse(info,
               "GPTQ checkpoint_format '" + info.variant + "' (a kernel layout) is not readable; gptq and gptq_v2 are");
}

void classifyModelOpt(FormatInfo& info) {
    info.format = Format::ModelOpt;
    info.variant = jsonString(info.config, "quant_algo", "");
    for (auto& ch : info.variant) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    const auto& v = info.variant;
    if (v != "NVFP4" && v != "W4A16_NVFP4" && !v.starts_with("FP8") && v != "MIXED_PRECISION")
        refuse(info, "ModelOpt quant_algo '" + v + "' is not readable (NVFP4 and FP8 variants are)");
}

void classifyBitsandbytes(FormatInfo& info) {
    info.format = Format::Bitsandbytes;
    const auto& c = info.config;
    if (jsonBool(c, "load_in_8bit", jsonBool(c, "_load_in_8bit", false)))
        info.variant = "int8";
    else
        info.variant = lowerCase(jsonString(c, "bnb_4bit_quant_type", "nf4"));
}

void classifyByConfig(FormatInfo& info, const std::string& method) {
    const auto& c = info.config;
    if (method == "gptq") return classifyGptq(info);
    if (method == "awq") {
        info.format = Format::Awq;
        info.variant = lowerCase(jsonString(c, "version", "gemm"));
        if (info.variant != "gemm" && info.variant != "gemv")
            refuse(info, "AWQ version '" + info.variant + "' is not readable; gemm and gemv are");
        return;
    }
    if (method == "fp8") {
        info.format = Format::Fp8;
        info.variant = c.contains("weight_block_size") && c["weight_block_size"].is_array() ? "block" : "tensor";
        return;
    }
    if (method == "compressed-tensors") {
        info.format = Format::CompressedTensors;
        info.variant = jsonString(c, "format", "");
        return;
    }
    if (method.starts_with("modelopt")) return classifyModelOpt(info);
    if (method == "mxfp4") {
        info.format = Format::Mxfp4;
        info.variant = "gpt-oss";
        return;
    }
    if (method == "bitsandbytes") return classifyBitsandbytes(info);
    if (method == "quantscope-trellis") {
        info.format = Format::QuantscopeTrellis;
        info.variant = "v" + std::to_string(jsonInt(c, "format_version", 1, {1, 1000}));
        return;
    }
    if (method == "exl3") {
        info.format = Format::Exl3;
        info.variant = jsonString(c, "version", "");
        return;
    }
    info.format = Format::Unknown;
    info.variant = method;
    refuse(info, "quant_method '" + method + "' is not a format QuantScope reads");
}

bool anyTensorEndsWith(const io::Checkpoint& ck, std::string_view suffix) {
    for (const auto& t : ck.tensors())
        if (t.info->name.ends_with(suffix)) return true;
    return false;
}

bool anyTensorContains(const io::Checkpoint& ck, std::string_view part) {
    for (const auto& t : ck.tensors())
        if (t.info->name.find(part) != std::string::npos) return true;
    return false;
}

// GPTQ without a config file: bits from qweight rows over g_idx length, group size from scales rows.
nlohmann::json inferGptqConfig(const io::Checkpoint& ck) {
    nlohmann::json c = {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 128}, {"desc_act", false}, {"sym", true}};
    for (const auto& ref : detail::refsWithSuffix(ck, ".qweight")) {
        const auto* q = ck.find(ref.prefix + ".qweight");
        const auto* g = ck.find(ref.prefix + ".g_idx");
        const auto* s = ck.find(ref.prefix + ".scales");
        if (!g || !s || q->info->shape.size() != 2 || g->info->shape.size() != 1 || s->info->shape.size() != 2)
            continue;
        const auto k = g->info->shape[0], groups = s->info->shape[0];
        if (k <= 0 || q->info->shape[0] * 32 % k != 0 || groups <= 0) continue;
        c["bits"] = q->info->shape[0] * 32 / k;
        c["group_size"] = groups == 1 ? -1 : k / groups;
        break;
    }
    return c;
}

void classifyByTensors(FormatInfo& info, const io::Checkpoint& ck) {
    if (anyTensorEndsWith(ck, ".qweight")) {
        if (anyTensorEndsWith(ck, ".g_idx")) {
            info.config = inferGptqConfig(ck);
            return classifyGptq(info);
        }
        info.format = Format::Awq;  // AutoAWQ writes no g_idx
        info.variant = "gemm";
        return;
    }
    if (anyTensorContains(ck, ".weight.quant_state.bitsandbytes__") || anyTensorEndsWith(ck, ".SCB")) {
        info.format = Format::Bitsandbytes;
        info.variant = anyTensorEndsWith(ck, ".SCB")                ? "int8"
                       : anyTensorContains(ck, "bitsandbytes__fp4") ? "fp4"
                                                                    : "nf4";
        return;
    }
    if (anyTensorEndsWith(ck, "_blocks") || anyTensorEndsWith(ck, ".blocks")) {
        info.format = Format::Mxfp4;
        info.variant = "gpt-oss";
        return;
    }
    if (detail::looksLikeExl3(ck)) {
        info.format = Format::Exl3;
        return;
    }
    if (anyTensorEndsWith(ck, ".trellis_header")) {
        info.format = Format::QuantscopeTrellis;
        info.variant = "v1";
        return;
    }
    if (anyTensorEndsWith(ck, ".weight_packed")) {
        info.format = Format::CompressedTensors;
        return refuse(info, "compressed-tensors tensors without a quantization_config: bits and symmetry are unknown");
    }
    if (anyTensorEndsWith(ck, ".weight_scale_2")) {
        info.format = Format::ModelOpt;
        for (const auto& t : ck.tensors())
            if (t.info->name.ends_with(".weight_scale_2")) {
                const auto* w = ck.find(t.info->name.substr(0, t.info->name.size() - 15) + ".weight");
                info.variant = w && w->info->dtype == io::DType::U8 ? "NVFP4" : "FP8";
                break;
            }
        info.config = {{"quant_method", "modelopt"}, {"quant_algo", info.variant}};
        return;
    }
    if (anyTensorEndsWith(ck, ".weight_scale_inv") || anyTensorEndsWith(ck, ".weight_scale")) {
        info.format = Format::Fp8;
        info.variant = anyTensorEndsWith(ck, ".weight_scale_inv") ? "block" : "tensor";
        return;
    }
    info.format = Format::Dense;
}

// A config without a usable quant_method is not guessed over: reading GPTQ v2 tensors as v1
// symmetric (every zero point off by one) is what guessing did. bitsandbytes configs written before
// quant_method existed say load_in_4bit / load_in_8bit instead.
std::string methodOf(const FormatInfo& info) {
    const auto& c = info.config;
    if (c.empty()) return "";
    if (const auto method = lowerCase(jsonString(c, "quant_method", "")); !method.empty()) return method;
    if (jsonBool(c, "load_in_4bit", false) || jsonBool(c, "load_in_8bit", false) || jsonBool(c, "_load_in_8bit", false))
        return "bitsandbytes";
    throw detail::ConfigError(
        "has no 'quant_method' naming the format; QuantScope does not guess a format over a config "
        "that is present");
}

void classify(FormatInfo& info, const io::Checkpoint& checkpoint) {
    if (const auto method = methodOf(info); !method.empty())
        classifyByConfig(info, method);
    else
        classifyByTensors(info, checkpoint);
    if (info.format == Format::Exl3) {
        detail::addExl3TensorStorage(checkpoint, info.config);
        info.variant = jsonString(info.config, "version", info.variant);
    }
}

// One malformed layer must not hide the rest of the checkpoint from `inspect`.
LayerQuantInfo describeOrExplain(const LinearCodec& codec, const io::Checkpoint& ck, const nlohmann::json& config,
                                 const std::string& configSource, const LinearRef& ref) {
    LayerQuantInfo info;
    info.ref = ref;
    info.codec = std::string(codec.name());
    info.scheme = "unreadable";
    try {
        return codec.describe(ck, config, ref);
    } catch (const detail::ConfigError& e) {
        info.problem = Error(configSource + ": " + e.what()).what();
    } catch (const Error& e) {
        info.problem = e.what();
    }
    return info;
}

void listLayers(FormatInfo& info, const io::Checkpoint& ck) {
    const LinearReader reader(ck, info);
    for (const auto& ref : reader.linears()) {
        const auto& codec = reader.codecOf(ref);
        if (&codec == &detail::denseCodec())
            info.denseLinears.push_back(ref.label());
        else
            info.layers.push_back(describeOrExplain(codec, ck, info.config, info.configSource, ref));
    }
}

// Whether tensors that look like `byNames` (classifyByTensors) can be what a config naming `byConfig`
// describes: GPTQ without g_idx looks like AWQ, compressed-tensors and ModelOpt FP8 look like FP8,
// and a config may quantize nothing at all.
bool compatible(Format byConfig, Format byNames) {
    if (byNames == byConfig || byNames == Format::Dense) return true;
    if (byConfig == Format::Gptq && byNames == Format::Awq) return true;
    if ((byConfig == Format::CompressedTensors || byConfig == Format::ModelOpt) && byNames == Format::Fp8) return true;
    return false;
}

// A config that names one format over tensors of another is refused, naming its quant_method: the
// codec it picks would read the tensors as something else, or skip them.
void refuseContradictingTensors(FormatInfo& info, const FormatInfo& byNames) {
    const std::string method = jsonString(info.config, "quant_method", "");
    if (method.empty()) return;
    if (!compatible(info.format, byNames.format))
        refuse(info, info.configSource + " says quant_method '" + method + "', but the tensors are laid out as " +
                         std::string(formatName(byNames.format)) +
                         (byNames.variant.empty() ? "" : " (" + byNames.variant + ")"));
}

// Tensor name endings that only a quantized layout stores for a linear (GPTQ/AWQ, FP8,
// compressed-tensors, ModelOpt, bitsandbytes, EXL3, QuantScope trellis, gpt-oss MXFP4).
constexpr std::string_view kQuantizedParts[] = {".qweight",
                                                ".qzeros",
                                                ".scales",
                                                ".g_idx",
                                                ".weight_scale",
                                                ".weight_scale_inv",
                                                ".weight_scale_2",
                                                ".weight_packed",
                                                ".weight_global_scale",
                                                ".weight_zero_point",
                                                ".weight_shape",
                                                ".weight_g_idx",
                                                ".SCB",
                                                ".weight_format",
                                                ".weight.absmax",
                                                ".weight.quant_map",
                                                ".weight.nested_absmax",
                                                ".weight.nested_quant_map",
                                                ".trellis",
                                                ".suh",
                                                ".svh",
                                                ".su",
                                                ".sv",
                                                ".mcg",
                                                ".mul1",
                                                ".trellis_header",
                                                ".trellis_starts",
                                                ".trellis_scales",
                                                ".trellis_codes",
                                                "_blocks",
                                                "_scales",
                                                ".blocks"};
constexpr std::string_view kQuantStateInfix = ".weight.quant_state.bitsandbytes__";

// The linear prefix a quantized part belongs to ("" when the name ends in none of them).
std::string quantizedPartOwner(std::string_view name) {
    if (const auto at = name.find(kQuantStateInfix); at != std::string_view::npos)
        return std::string(name.substr(0, at));
    for (const auto part : kQuantizedParts)
        if (name.size() > part.size() && name.ends_with(part))
            return std::string(name.substr(0, name.size() - part.size()));
    return "";
}

// Every stored part of a quantized linear must be read by the codec the format chose, and every
// weight that is not a float matrix must be claimed by some codec: otherwise decoding would drop it
// (a quant_method naming another format over GPTQ tensors made `dequantize` copy qweight/qzeros
// into a "dense" checkpoint), or read it as something else.
void refuseUnclaimedTensors(FormatInfo& info, const io::Checkpoint& ck) {
    std::set<std::string, std::less<>> quantized, any;
    for (const auto& l : info.layers) quantized.insert(l.ref.prefix), any.insert(l.ref.prefix);
    for (const auto& d : info.denseLinears) any.insert(d);
    const auto because = [&] {
        const std::string method = jsonString(info.config, "quant_method", "");
        if (!method.empty()) return " (" + info.configSource + " says quant_method '" + method + "')";
        return std::string(" (the tensor names say ") + std::string(formatName(info.format)) + ")";
    };
    for (const auto& t : ck.tensors()) {
        const std::string& name = t.info->name;
        const std::string owner = quantizedPartOwner(name);
        if (!owner.empty() && !quantized.contains(owner))
            return refuse(info, "tensor '" + name + "' is part of a quantized linear that the " +
                                    std::string(formatName(info.format)) + " reader does not read" + because());
        const bool weight = name.ends_with(".weight") && name.size() > 7;
        const auto d = t.info->dtype;
        const bool denseFloat = io::isDenseFloat(d);
        if (weight && !denseFloat && t.info->shape.size() == 2 && t.naming.role != io::TensorRole::Embedding &&
            t.naming.role != io::TensorRole::Norm && !any.contains(std::string_view(name).substr(0, name.size() - 7)))
            return refuse(info, "tensor '" + name + "' (" + std::string(io::dtypeName(t.info->dtype)) +
                                    ") is a weight that the " + std::string(formatName(info.format)) +
                                    " reader does not read" + because());
    }
}

// A dense float weight beside a quantized linear's parts (GPTQ's qweight and a weight, say): a
// checkpoint stores a linear once, and which of the two a loader would use is not defined.
void refuseTwoWeights(FormatInfo& info, const io::Checkpoint& ck) {
    for (const auto& l : info.layers) {
        const io::CheckpointTensor* weight = ck.find(l.ref.prefix + ".weight");
        if (weight == nullptr || !io::isDenseFloat(weight->info->dtype) || weight->info->shape.size() != 2) continue;
        return refuse(info, l.ref.prefix + " has both a dense 'weight' (" +
                                std::string(io::dtypeName(weight->info->dtype)) + ") and the " + l.codec +
                                " parts of a quantized linear; a checkpoint stores a linear once, and "
                                "which of the two a loader would use is not defined");
    }
}

// A bitsandbytes config against its tensors. 8-bit over 4-bit tensors, or 4-bit over 8-bit ones, is
// a model transformers cannot load (the shapes differ): refused. A 4-bit type that disagrees with the
// tensors' quant_state is passed over, since the quant_state decides how transformers decodes each
// weight: a warning, and the tensors' type.
void checkBitsandbytesConfig(FormatInfo& info, const FormatInfo& byNames) {
    if (info.format != Format::Bitsandbytes || !info.decodable || info.config.empty()) return;
    if (byNames.format != Format::Bitsandbytes) return;
    const bool configInt8 = info.variant == "int8", tensorsInt8 = byNames.variant == "int8";
    if (configInt8 != tensorsInt8)
        return refuse(info, info.configSource + " says " +
                                (configInt8 ? "load_in_8bit" : "4-bit '" + info.variant + "'") +
                                ", but the tensors hold bitsandbytes " +
                                (tensorsInt8 ? "int8 weights (SCB)" : byNames.variant + " 4-bit codes (quant_state)"));
    // transformers' own default (fp4) applies when the key is absent; the tensors decide either way.
    if (configInt8 || info.variant == byNames.variant || !info.config.contains("bnb_4bit_quant_type")) {
        info.variant = byNames.variant;
        return;
    }
    const bool known = info.variant == "nf4" || info.variant == "fp4";
    info.warnings.push_back(info.configSource + ": bnb_4bit_quant_type '" + info.variant + "' " +
                            (known ? "disagrees with the tensors" : "is no bitsandbytes 4-bit type (nf4, fp4)") +
                            "; their quant_state says '" + byNames.variant + "', which decides, as in transformers");
    info.variant = byNames.variant;
}

// Tensors whose names look like a decoder layer's but name none ("model.layers.-1.mlp.down_proj.weight"):
// a loader leaves them unused, and so does QuantScope. One line for all of them.
void warnAboutLayerlessNames(FormatInfo& info, const io::Checkpoint& ck) {
    std::size_t count = 0;
    const std::string* first = nullptr;
    for (const auto& t : ck.tensors())
        if (t.naming.badLayerIndex) ++count, first = first ? first : &t.info->name;
    if (count == 0) return;
    info.warnings.push_back("tensor '" + *first + "'" +
                            (count > 1 ? " and " + std::to_string(count - 1) + " more name" : " names") +
                            " no decoder layer (a layer index is 0 to " + std::to_string(io::kMaxLayerIndex - 1) +
                            "); a loader leaves " + (count > 1 ? "them" : "it") + " unused, and so does QuantScope");
}

}  // namespace

std::string_view formatName(Format f) {
    switch (f) {
        case Format::Dense: return "dense";
        case Format::Gptq: return "gptq";
        case Format::Awq: return "awq";
        case Format::Fp8: return "fp8";
        case Format::CompressedTensors: return "compressed-tensors";
        case Format::ModelOpt: return "modelopt";
        case Format::Mxfp4: return "mxfp4";
        case Format::Bitsandbytes: return "bitsandbytes";
        case Format::Exl3: return "exl3";
        case Format::QuantscopeTrellis: return "quantscope-trellis";
        case Format::Gguf: return "gguf";
        case Format::Unknown: return "unknown";
    }
    return "unknown";
}

std::optional<LayerQuantInfo> FormatInfo::uniformScheme() const {
    if (layers.empty()) return std::nullopt;
    const auto same = [](const LayerQuantInfo& a, const LayerQuantInfo& b) {
        return a.codec == b.codec && a.scheme == b.scheme && a.bits == b.bits && a.groupSize == b.groupSize &&
               a.blockRows == b.blockRows && a.granularity == b.granularity && a.actOrder == b.actOrder &&
               a.symmetric == b.symmetric;
    };
    for (const auto& l : layers)
        if (!same(l, layers.front())) return std::nullopt;
    return layers.front();
}

FormatInfo detect(const io::Checkpoint& checkpoint) {
    FormatInfo info;
    if (const io::GgufFile* gguf = checkpoint.gguf()) {
        // A GGUF says what it is by being one; each linear's own ggml type is in its LayerQuantInfo.
        info.format = Format::Gguf;
        if (const auto fileType = gguf->metadata().integer("general.file_type"))
            info.variant = io::llamaFtypeName(*fileType);
        info.config = checkpoint.quantizationConfig();
        info.configSource = checkpoint.configSource().string();
        listLayers(info, checkpoint);
        return info;
    }
    auto loaded = detail::loadQuantConfig(checkpoint);
    info.config = std::move(loaded.config);
    info.configSource = std::move(loaded.source);
    try {
        classify(info, checkpoint);
    } catch (const detail::ConfigError& e) {
        info.format = Format::Unknown;
        refuse(info, info.configSource + ": " + e.what());
    }
    // What the tensor names alone say, which a config must not contradict (one scan for both checks).
    FormatInfo byNames;
    if (!info.config.empty()) classifyByTensors(byNames, checkpoint);
    if (info.decodable) refuseContradictingTensors(info, byNames);
    checkBitsandbytesConfig(info, byNames);
    listLayers(info, checkpoint);
    if (info.decodable) refuseUnclaimedTensors(info, checkpoint);
    if (info.decodable) refuseTwoWeights(info, checkpoint);
    warnAboutLayerlessNames(info, checkpoint);
    return info;
}

std::vector<LayerQuantInfo> describeLayers(const io::Checkpoint& checkpoint) { return detect(checkpoint).layers; }

}  // namespace qs::formats
