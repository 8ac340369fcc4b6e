#include "pages/quantized_codes.h"

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/formats/linear_reader.h"

namespace qs::gui {

std::optional<formats::LayerQuantInfo> linearOfPart(const formats::FormatInfo& format, const std::string& tensor) {
    const auto dot = tensor.rfind('.');
    if (dot == std::string::npos) return std::nullopt;
    const std::string_view prefix(tensor.data(), dot);
    for (const formats::LayerQuantInfo& layer : format.layers)
        if (layer.ref.prefix == prefix && layer.ref.expert < 0 && layer.scheme != "dense" && layer.problem.empty())
            return layer;
    return std::nullopt;
}

std::map<std::string, formats::LayerQuantInfo, std::less<>> linearsByCodes(const io::Checkpoint& checkpoint,
                                                                           const formats::FormatInfo& format) {
    // The largest "<prefix>.<part>" (no further dot, not the bias) of every prefix.
    std::map<std::string, std::pair<std::string, std::uint64_t>, std::less<>> largestPart;
    for (const io::CheckpointTensor& t : checkpoint.tensors()) {
        const std::string& name = t.info->name;
        const auto dot = name.rfind('.');
        if (dot == std::string::npos || name.ends_with("bias")) continue;
        auto& [largest, bytes] = largestPart[name.substr(0, dot)];
        if (largest.empty() || t.info->byteSize() > bytes) {
            largest = name;
            bytes = t.info->byteSize();
        }
    }
    std::map<std::string, formats::LayerQuantInfo, std::less<>> byCodes;
    for (const formats::LayerQuantInfo& layer : format.layers) {
        if (layer.ref.expert >= 0 || layer.scheme == "dense" || !layer.problem.empty()) continue;
        const auto part = largestPart.find(layer.ref.prefix);
        if (part != largestPart.end()) byCodes.emplace(part->second.first, layer);
    }
    return byCodes;
}

std::optional<formats::LayerQuantInfo> linearOfCodes(const io::Checkpoint& checkpoint,
                                                     const formats::FormatInfo& format, const std::string& tensor) {
    if (!linearOfPart(format, tensor)) return std::nullopt;  // the common case, without the pass
    const auto byCodes = linearsByCodes(checkpoint, format);
    const auto it = byCodes.find(tensor);
    if (it == byCodes.end()) return std::nullopt;
    return it->second;
}

std::optional<DecodedCodes> decodeCodes(const io::Checkpoint& checkpoint, const std::string& tensor) {
    const formats::FormatInfo format = formats::detect(checkpoint);  // configs and headers only
    const auto linear = linearOfCodes(checkpoint, format, tensor);
    if (!linear) return std::nullopt;
    return DecodedCodes{formats::LinearReader(checkpoint, format).decodeF32(linear->ref.prefix), linear->summary()};
}

analysis::QuantizedLinears overviewDecoding(const std::shared_ptr<const io::Checkpoint>& checkpoint) {
    formats::FormatInfo format;
    try {
        format = formats::detect(*checkpoint);  // configs and headers only
    } catch (const Error&) {
        return {};  // a format that does not detect: its stored float weights only (the Quantized tab says why)
    }
    auto byCodes = std::make_shared<const std::map<std::string, formats::LayerQuantInfo, std::less<>>>(
        linearsByCodes(*checkpoint, format));
    if (byCodes->empty()) return {};
    auto reader = std::make_shared<const formats::LinearReader>(*checkpoint, std::move(format),
                                                                formats::DecodeOptions{.allowNonFinite = true});
    analysis::QuantizedLinears hook;
    hook.isCodes = [byCodes](const io::CheckpointTensor& t) { return byCodes->contains(t.info->name); };
    // The reader refers to the checkpoint: the hook keeps both alive.
    hook.decode = [checkpoint, byCodes, reader](const io::CheckpointTensor& t) {
        return reader->decodeF32(byCodes->at(t.info->name).ref.prefix);
    };
    return hook;
}

}  // namespace qs::gui
