#include "qs/pipeline/quantize_route.h"

#include "qs/error.h"
#include "qs/pipeline/gpt_oss_mxfp4_export.h"

namespace qs::pipeline {

namespace {

// A GGUF method, --format gguf and a .gguf destination each imply the GGUF file.
bool writesGgufFile(const MethodSpec& method, const std::string& format, const std::filesystem::path& out) {
    const bool asked = format == "gguf" || out.extension() == ".gguf";
    if (asked && !method.gguf())
        throw Error(
            "a GGUF file is written by llama.cpp's methods (--method q4_k_m, q5_k_m, q6_k, q8_0, ...), not by " +
            method.name);
    if (method.gguf() && !format.empty() && format != "gguf")
        throw Error("--method " + method.name + " writes a GGUF file, not --format " + format);
    // One file, not a folder: a destination without the extension is more likely a folder meant.
    if (method.gguf() && out.extension() != ".gguf")
        throw Error("--method " + method.name + " writes one GGUF file: --out " + out.string() + " must end in .gguf");
    return method.gguf();
}

// Stacked experts load in vLLM as the family's own MXFP4 or dense only, not as per-expert quantized linears.
void requireStackedExpertsMxfp4(const io::Checkpoint& source, const MethodSpec* method, const std::string& format) {
    if (method == nullptr || method->name != "mxfp4")
        throw Error(source.root().string() +
                    ": gpt_oss's stacked experts load in vLLM as gpt-oss's own MXFP4 or dense, not as per-expert "
                    "quantized linears, so only --method mxfp4 (its experts in gpt-oss's own layout) or a GGUF method "
                    "(q4_k_m, q8_0, ...) applies; compare measures " +
                    (method == nullptr ? std::string("a mix") : method->name));
    if (!format.empty() && format != "gpt-oss-mxfp4")
        throw Error("gpt-oss's experts are written in its own MXFP4 layout (--format gpt-oss-mxfp4), not " + format);
}

}  // namespace

QuantizeRoute quantizeRoute(const io::Checkpoint& source, const MethodSpec* method, const std::string& format,
                            const std::filesystem::path& out) {
    // The experts of a dense gpt-oss go back to its own MXFP4 layout, or into a GGUF's stacked experts as any MoE's.
    if (isDenseGptOss(source) && (method == nullptr || !method->gguf())) {
        requireStackedExpertsMxfp4(source, method, format);
        return QuantizeRoute::StackedExpertsMxfp4;
    }
    if (method != nullptr && writesGgufFile(*method, format, out)) return QuantizeRoute::GgufFile;
    return QuantizeRoute::Checkpoint;
}

}  // namespace qs::pipeline
