#pragma once
// Which stored tensor of a quantized checkpoint is a linear's packed codes (GPTQ qweight, NVFP4
// weight_packed, FP8 weight, ...): the histogram of those words (int32 around ±2·10⁹, bytes 0-255)
// says nothing, so the Histogram page shows the linear's decoded weights instead.
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "qs/analysis/layer_overview.h"
#include "qs/formats/format_info.h"
#include "qs/io/checkpoint.h"
#include "qs/matrix.h"

namespace qs::gui {

// Every quantized linear's codes (its largest stored part, the bias aside) by tensor name, in one pass
// over the checkpoint's tensors; experts stacked in one tensor are left out.
std::map<std::string, formats::LayerQuantInfo, std::less<>> linearsByCodes(const io::Checkpoint& checkpoint,
                                                                           const formats::FormatInfo& format);

// The quantized linear whose largest stored part is `tensor` (its codes); nullopt for scales, zeros,
// g_idx, dense tensors and experts stacked in one tensor.
std::optional<formats::LayerQuantInfo> linearOfCodes(const io::Checkpoint& checkpoint,
                                                     const formats::FormatInfo& format, const std::string& tensor);

// The quantized linear `tensor` is a stored part of (codes, scales, zeros, g_idx, global scale: any
// "<prefix>.<part>"); nullopt for dense tensors, experts stacked in one tensor and malformed linears.
std::optional<formats::LayerQuantInfo> linearOfPart(const formats::FormatInfo& format, const std::string& tensor);

// The weights `tensor` decodes to when it is a quantized linear's codes (on a worker: it reads and
// decodes the whole linear), with the scheme they were decoded from ("int4 g128 asym").
struct DecodedCodes {
    MatrixF weight;  // [out, in]
    std::string scheme;
};
std::optional<DecodedCodes> decodeCodes(const io::Checkpoint& checkpoint, const std::string& tensor);

// The Overview's hook for a quantized checkpoint's linears: each codes tensor decoded by its format
// (NaN and Inf kept: the statistics count finite values only). Unset for a dense checkpoint. The
// checkpoint must outlive the hook's calls.
analysis::QuantizedLinears overviewDecoding(const std::shared_ptr<const io::Checkpoint>& checkpoint);

}  // namespace qs::gui
