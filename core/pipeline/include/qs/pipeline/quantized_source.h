#pragma once
// A source whose linears are already quantized: an FP8 release (DeepSeek-V3, Kimi-K2, Qwen3-FP8), an
// INT4 compressed-tensors, GPTQ or AWQ model, a GGUF of Q8_0 blocks, gpt-oss's MXFP4 experts. compare,
// quantize, the Hessian and the GUI take it as it is: its linears decoded by formats::LinearReader (the
// format's own arithmetic, through pipeline::DecodedWeights, as `eval` reads the same checkpoint) are
// the weights quantized anew and the reference that the KL is measured against. One line says so
// (referenceNote), and the result records it (MethodResult::quantizedSource, the
// "source_quantization" of quantscope_report.json). Quantizing decoded weights adds the new rounding
// to the first one: the KL measured is the new method's against the source, not against the model the
// source was made from, which QuantScope never sees. A source some of whose linears do not decode is
// refused, naming why (undecodableSourceRefusal).
#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "qs/formats/format_info.h"
#include "qs/io/checkpoint.h"

namespace qs::pipeline {

struct QuantizedSource {
    std::string format;   // formats::formatName: "fp8", "gguf", "compressed-tensors", ...
    std::string variant;  // formats::FormatInfo::variant: "block", "Q8_0", "pack-quantized", ... ("" when none)
    std::string scheme;   // the quantized linears' scheme ("fp8 block 128x128 sym"; a few joined by " + ")
    std::size_t quantizedLinears = 0;

    // "fp8, fp8 block 128x128 sym, 14 quantized linears"
    std::string description() const;
    // "source is already quantized (<description>): its decoded weights are the reference; KL is
    // measured against them": what compare, quantize and the Quantize panel say, in one line.
    std::string referenceNote() const;
    // The same for a weight-only run (no forward pass, no KL): "source is already quantized (...): its
    // decoded weights are what is quantized, and the weight errors are measured against them".
    std::string weightsOnlyNote() const;
    bool operator==(const QuantizedSource&) const = default;
};

// What the checkpoint's quantized linears are; nullopt when it has none (a dense checkpoint, a GGUF
// whose linears are F32 / F16 / BF16).
std::optional<QuantizedSource> quantizedSource(const formats::FormatInfo& format);

// Why the checkpoint cannot be quantized from or run: its format, or one of its linears, does not
// decode (a Marlin GPTQ, an unknown quant_method, a ggml type QuantScope has no decoder for); "" when
// every linear decodes.
std::string undecodableSourceRefusal(const io::Checkpoint& checkpoint, const formats::FormatInfo& format);
// Throws qs::Error with that refusal, when there is one.
void requireDecodableSource(const io::Checkpoint& checkpoint, const formats::FormatInfo& format);

// {"format", "variant", "scheme", "quantized_linears", "reference"}: what a report records of the source.
nlohmann::json toJson(const QuantizedSource& source);

}  // namespace qs::pipeline
