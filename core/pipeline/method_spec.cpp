#include "qs/pipeline/method_spec.h"

#include <cctype>
#include <charconv>
#include <optional>

#include "qs/error.h"
#include "qs/pipeline/gguf_type_mix.h"
#include "qs/quant/ggml_encode.h"

namespace qs::pipeline {
namespace {

std::optional<int> parseInt(std::string_view s) {
    int value = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
    return value;
}

[[noreturn]] void badMethod(std::string_view name, std::string_view why) {
    throw Error("unknown method '" + std::string(name) + "': " + std::string(why) +
                " (known: rtnB, gptqB, gptqB-act, gptaqB, awqB, fp8, fp8-channel, fp8-tensor, fp8-w8a8, "
                "fp8-w8a8-dynamic, mxfp4, "
                "nvfp4, nvfp4-w4a4, nf4, trellisK[-lL], "
                "and llama-quantize's q4_k_m, q5_k_m, q6_k, q8_0, q4_0, f16, ...)");
}

// "gptq4-act" -> prefix "gptq", number 4, suffix "act".
struct Parts {
    std::string prefix;
    std::optional<int> number;
    std::string suffix;
};

Parts split(std::string_view name) {
    Parts parts;
    std::size_t i = 0;
    while (i < name.size() && name[i] >= 'a' && name[i] <= 'z') ++i;
    parts.prefix = name.substr(0, i);
    std::size_t j = i;
    while (j < name.size() && name[j] >= '0' && name[j] <= '9') ++j;
    if (j > i) parts.number = parseInt(name.substr(i, j - i));
    if (j < name.size()) {
        if (name[j] != '-') badMethod(name, "unexpected character");
        parts.suffix = name.substr(j + 1);
    }
    return parts;
}

int requireBits(std::string_view name, const Parts& parts, int lo, int hi) {
    if (!parts.number) badMethod(name, "bits missing");
    if (*parts.number < lo || *parts.number > hi)
        badMethod(name, "bits must be " + std::to_string(lo) + ".." + std::to_string(hi));
    return *parts.number;
}

}  // namespace

std::string MethodSpec::label() const { return weightLabel() + (kvCacheFp8 ? ", KV cache FP8" : ""); }

std::string MethodSpec::weightLabel() const {
    const std::string group = groupSize < 0 ? "per-row" : "g" + std::to_string(groupSize);
    const std::string bitsText = std::to_string(bits);
    switch (kind) {
        case MethodKind::Rtn: return "RTN int" + bitsText + ", " + group;
        case MethodKind::Gptq:
            return std::string(gptaq ? "GPTAQ" : "GPTQ") + " int" + bitsText + ", " + group +
                   (actOrder ? ", act-order" : "") + (sym ? ", sym" : "");
        case MethodKind::Awq: return "AWQ int" + bitsText + ", " + group;
        case MethodKind::Fp8:
            if (activations == quant::ActivationFormat::Fp8Tensor) return "FP8 W8A8, per-tensor weights, static inputs";
            if (activations == quant::ActivationFormat::Fp8Token)
                return "FP8 W8A8, per-channel weights, per-token inputs";
            if (fp8Scales == Fp8Granularity::Channel) return "FP8 E4M3, per-channel scales";
            if (fp8Scales == Fp8Granularity::Tensor) return "FP8 E4M3, per-tensor scale";
            return "FP8 E4M3, 128x128 blocks";
        case MethodKind::Mxfp4: return "MXFP4";
        case MethodKind::Nvfp4: return activations == quant::ActivationFormat::Nvfp4 ? "NVFP4 W4A4" : "NVFP4";
        case MethodKind::Nf4: return "NF4, blocks of 64, double quant";
        case MethodKind::Trellis: return "trellis (QTIP-style), L=" + std::to_string(trellisL) + ", K=" + bitsText;
        case MethodKind::Gguf:
            if (ggmlType) return "ggml " + std::string(io::ggmlTypeTraits(*ggmlType).name) + " per linear";
            return "GGUF " + std::string(ggufFileTypeOf(ggufFileType).name);
    }
    return name;
}

bool MethodSpec::needsCalibration() const {
    return sequential() || quant::needsCalibratedScale(activations) || kvCacheFp8;
}

bool MethodSpec::sequential() const { return kind == MethodKind::Gptq || kind == MethodKind::Awq; }

bool MethodSpec::integerGrid() const {
    return kind == MethodKind::Rtn || kind == MethodKind::Gptq || kind == MethodKind::Awq;
}

MethodSpec parseMethod(std::string_view name, int groupSize) {
    if (groupSize != -1 && groupSize <= 0)
        throw Error("group size must be positive or -1, got " + std::to_string(groupSize));
    MethodSpec spec;
    spec.groupSize = groupSize;
    if (const GgufFileType* gguf = ggufFileTypeNamed(name)) {
        spec.kind = MethodKind::Gguf;
        spec.ggufFileType = gguf->fileType;
        spec.bits = static_cast<int>(io::ggmlTypeTraits(gguf->baseType).bitsPerWeight());
        spec.groupSize = io::ggmlTypeTraits(gguf->baseType).blockElements;
        spec.name = std::string(name);
        for (char& c : spec.name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return spec;
    }
    const Parts parts = split(name);
    const auto noSuffix = [&] {
        if (!parts.suffix.empty()) badMethod(name, "unexpected suffix");
    };
    if (parts.prefix == "rtn") {
        spec.kind = MethodKind::Rtn;
        spec.bits = requireBits(name, parts, 2, 8);
        noSuffix();
    } else if (parts.prefix == "gptq" || parts.prefix == "gptaq") {
        spec.kind = MethodKind::Gptq;
        spec.gptaq = parts.prefix == "gptaq";
        spec.bits = requireBits(name, parts, 2, 8);
        for (std::string_view rest = parts.suffix; !rest.empty();) {
            const std::size_t dash = std::min(rest.find('-'), rest.size());
            const std::string_view flag = rest.substr(0, dash);
            if (flag == "act")
                spec.actOrder = true;
            else if (flag == "sym")
                spec.sym = true;
            else
                badMethod(name, "unknown GPTQ option '" + std::string(flag) + "' (act, sym)");
            rest = rest.substr(std::min(dash + 1, rest.size()));
        }
    } else if (parts.prefix == "awq") {
        spec.kind = MethodKind::Awq;
        spec.bits = requireBits(name, parts, 2, 8);
        noSuffix();
    } else if (parts.prefix == "fp" && parts.number == 8) {
        spec.kind = MethodKind::Fp8, spec.bits = 8;
        if (parts.suffix == "channel")
            spec.fp8Scales = Fp8Granularity::Channel;
        else if (parts.suffix == "tensor")
            spec.fp8Scales = Fp8Granularity::Tensor;
        else if (parts.suffix == "w8a8")
            spec.fp8Scales = Fp8Granularity::Tensor, spec.activations = quant::ActivationFormat::Fp8Tensor;
        else if (parts.suffix == "w8a8-dynamic")
            spec.fp8Scales = Fp8Granularity::Channel, spec.activations = quant::ActivationFormat::Fp8Token;
        else if (!parts.suffix.empty())
            badMethod(name, "unknown FP8 variant '" + parts.suffix + "' (channel, tensor, w8a8, w8a8-dynamic)");
    } else if (parts.prefix == "mxfp" && parts.number == 4) {
        spec.kind = MethodKind::Mxfp4;
        noSuffix();
    } else if (parts.prefix == "nvfp" && parts.number == 4) {
        spec.kind = MethodKind::Nvfp4;
        if (parts.suffix == "w4a4")
            spec.activations = quant::ActivationFormat::Nvfp4;
        else
            noSuffix();
    } else if (parts.prefix == "nf" && parts.number == 4) {
        spec.kind = MethodKind::Nf4;
        noSuffix();
    } else if (parts.prefix == "trellis") {
        spec.kind = MethodKind::Trellis;
        spec.bits = requireBits(name, parts, 1, 4);
        if (!parts.suffix.empty()) {
            const auto l =
                parts.suffix.size() > 1 && parts.suffix[0] == 'l' ? parseInt(parts.suffix.substr(1)) : std::nullopt;
            if (!l || *l <= spec.bits || *l > 16) badMethod(name, "trellis state bits must be K < L <= 16");
            spec.trellisL = *l;
        }
    } else {
        badMethod(name, "no such method");
    }
    spec.name = std::string(name);
    return spec;
}

MethodSpec parseMixMethod(std::string_view name, int groupSize) {
    // "mxfp4" and "nvfp4" stay QuantScope's safetensors methods (ggml spells its types the same).
    const io::GgmlTypeTraits* type = io::ggmlTypeByName(name);
    if (type == nullptr || type->isFloat || !quant::ggmlEncodes(type->type) || type->type == io::GgmlType::MXFP4 ||
        type->type == io::GgmlType::NVFP4)
        return parseMethod(name, groupSize);
    MethodSpec spec;
    spec.kind = MethodKind::Gguf;
    spec.ggmlType = type->type;
    spec.name = std::string(type->name);  // ggml's spelling, as llama-quantize --tensor-type and the file's tensors
    spec.bits = static_cast<int>(type->bitsPerWeight());
    spec.groupSize = type->blockElements;
    return spec;
}

namespace {

template <typename Parse>
std::vector<MethodSpec> parseList(std::string_view list, int groupSize, Parse parse) {
    std::vector<MethodSpec> specs;
    std::size_t start = 0;
    while (start <= list.size()) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        const std::string_view item = list.substr(start, comma - start);
        if (!item.empty()) specs.push_back(parse(item, groupSize));
        start = comma + 1;
    }
    if (specs.empty()) throw Error("no methods given");
    return specs;
}

}  // namespace

std::vector<MethodSpec> parseMethodList(std::string_view list, int groupSize) {
    return parseList(list, groupSize, parseMethod);
}

std::vector<MethodSpec> parseMixMethodList(std::string_view list, int groupSize) {
    return parseList(list, groupSize, parseMixMethod);
}

}  // namespace qs::pipeline
