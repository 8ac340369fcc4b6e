#include "qs/pipeline/quantized_source.h"

#include <algorithm>
#include <vector>

#include "qs/error.h"

namespace qs::pipeline {
namespace {

// Beyond this many distinct schemes, a list would not fit the one line.
constexpr std::size_t kSchemesNamed = 3;

// A GGUF is named by its file, a safetensors checkpoint by its folder.
std::string where(const io::Checkpoint& checkpoint) {
    return (checkpoint.gguf() != nullptr ? checkpoint.configSource() : checkpoint.root()).string();
}

std::string schemeOf(const std::vector<std::string>& schemes) {
    if (schemes.size() > kSchemesNamed) return std::to_string(schemes.size()) + " schemes";
    std::string joined;
    for (const std::string& s : schemes) joined += (joined.empty() ? "" : " + ") + s;
    return joined;
}

}  // namespace

std::string QuantizedSource::description() const {
    return format + ", " + scheme + ", " + std::to_string(quantizedLinears) + " quantized linears";
}

std::string QuantizedSource::referenceNote() const {
    return "source is already quantized (" + description() +
           "): its decoded weights are the reference; KL is measured against them";
}

std::string QuantizedSource::weightsOnlyNote() const {
    return "source is already quantized (" + description() +
           "): its decoded weights are what is quantized, and the weight errors are measured against them";
}

std::optional<QuantizedSource> quantizedSource(const formats::FormatInfo& format) {
    QuantizedSource source;
    std::vector<std::string> schemes;  // distinct, in the order of the linears
    for (const formats::LayerQuantInfo& layer : format.layers) {
        if (layer.scheme == "dense") continue;
        ++source.quantizedLinears;
        if (std::string s = layer.summary(); std::ranges::find(schemes, s) == schemes.end())
            schemes.push_back(std::move(s));
    }
    if (source.quantizedLinears == 0) return std::nullopt;
    source.format = std::string(formats::formatName(format.format));
    source.variant = format.variant;
    source.scheme = schemeOf(schemes);
    return source;
}

std::string undecodableSourceRefusal(const io::Checkpoint& checkpoint, const formats::FormatInfo& format) {
    const std::string what =
        "; QuantScope quantizes and runs a quantized checkpoint from its decoded weights: "
        "convert it to a layout QuantScope reads (dense BF16, GPTQ, AWQ, FP8, "
        "compressed-tensors, GGUF) with the tool that made it";
    if (!format.decodable) {
        const std::string kind =
            format.format == formats::Format::Unknown ? "quantized" : std::string(formats::formatName(format.format));
        return where(checkpoint) + ": its " + kind + " linears cannot be decoded: " + format.whyNot + what;
    }
    for (const formats::LayerQuantInfo& layer : format.layers)
        if (!layer.problem.empty())
            return where(checkpoint) + ": " + layer.ref.label() + " cannot be decoded: " + layer.problem + what;
    return "";
}

void requireDecodableSource(const io::Checkpoint& checkpoint, const formats::FormatInfo& format) {
    if (std::string refusal = undecodableSourceRefusal(checkpoint, format); !refusal.empty()) throw Error(refusal);
}

nlohmann::json toJson(const QuantizedSource& source) {
    return {{"format", source.format},
            {"variant", source.variant},
            {"scheme", source.scheme},
            {"quantized_linears", source.quantizedLinears},
            {"reference", "the source's decoded weights"}};
}

}  // namespace qs::pipeline
