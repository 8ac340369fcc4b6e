#include "pages/quantized_codes.h"

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

std::optional<formats::LayerQuantInfo> linearOfCodes(const io::Checkpoint& checkpoint,
                                                     const formats::FormatInfo& format, const std::string& tensor) {
    if (const auto layer = linearOfPart(format, tensor)) {
        const std::string& prefix = layer->ref.prefix;
        // The codes are the biggest of the linear's parts ("prefix.<part>", the bias aside).
        std::string largest;
        std::uint64_t largestBytes = 0;
        for (const io::CheckpointTensor& t : checkpoint.tensors()) {
            const std::string& name = t.info->name;
            if (name.size() <= prefix.size() + 1 || name.compare(0, prefix.size() + 1, prefix + ".") != 0) continue;
            if (name.find('.', prefix.size() + 1) != std::string::npos || name.ends_with("bias")) continue;
            if (t.info->byteSize() > largestBytes) {
                largestBytes = t.info->byteSize();
                largest = name;
            }
        }
        if (largest == tensor) return layer;
    }
    return std::nullopt;
}

std::optional<DecodedCodes> decodeCodes(const io::Checkpoint& checkpoint, const std::string& tensor) {
    const formats::FormatInfo format = formats::detect(checkpoint);  // configs and headers only
    const auto linear = linearOfCodes(checkpoint, format, tensor);
    if (!linear) return std::nullopt;
    return DecodedCodes{formats::LinearReader(checkpoint, format).decodeF32(linear->ref.prefix), linear->summary()};
}

}  // namespace qs::gui
