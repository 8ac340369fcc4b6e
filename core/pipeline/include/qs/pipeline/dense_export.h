#pragma once
// Dense export: any checkpoint QuantScope reads (GPTQ, AWQ, FP8, compressed-tensors, ModelOpt,
// bitsandbytes, ...) written back as a plain checkpoint. Each quantized linear is decoded by
// formats::LinearReader (the format's own arithmetic) and stored as "<prefix>.weight" in the chosen
// dtype (gpt-oss's stacked MXFP4 experts as transformers' BF16 "<prefix>" [E, in, out]); every other
// tensor is copied as it is; config.json loses quantization_config and says the
// new torch_dtype; tokenizer and generation files are copied. A GGUF source is written under its
// Hugging Face names with its synthesized config.json and its tokenizer as tokenizer.json; its
// embeddings and norms keep their float type (quantized ones take the chosen dtype). Written through
// io::CheckpointWriter.
#include <filesystem>

#include "qs/cancel_token.h"
#include "qs/io/dtype.h"
#include "qs/progress.h"

namespace qs::pipeline {

struct DenseExportRequest {
    std::filesystem::path source;
    std::filesystem::path destination;  // must not exist unless overwrite
    io::DType dtype = io::DType::BF16;  // BF16, F16 or F32
    bool overwrite = false;
    bool allowNonFinite = false;  // else a linear that decodes to NaN or Inf is refused
};

// Returns the folder written. Throws qs::Error (unreadable format, experts in OpenAI's original naming,
// I/O) or qs::Cancelled.
std::filesystem::path exportDense(const DenseExportRequest& request, const ProgressCallback& progress,
                                  const CancelToken& cancel);

}  // namespace qs::pipeline
