#pragma once
// A GGUF method's Job result written as the GGUF file it stands for: its linears exactly as the Job
// encoded (and measured) them, token_embd and output encoded as the method's mix says (as the Job's
// model of the method ran them), everything else as writeGguf writes it. With importance (the Job
// had calibration) the file records it as llama-quantize --imatrix does (quantize.imatrix.*).
#include <filesystem>
#include <string_view>

#include "qs/cancel_token.h"
#include "qs/io/checkpoint.h"
#include "qs/pipeline/gguf_export.h"
#include "qs/pipeline/job_result.h"
#include "qs/progress.h"

namespace qs::pipeline {

// `options` gives the tokenizer, name and overwrite; its chooser, file type and encoded linears are
// set here. Throws qs::Error for a result that is not a GGUF method's (or failed), and as writeGguf.
std::filesystem::path writeGgufResult(const io::Checkpoint& source, const MethodResult& result,
                                      const std::filesystem::path& destination, GgufExportOptions options,
                                      const ProgressCallback& progress, const CancelToken& cancel);

// The size of the file writeGgufResult (writeGgufMixResult for a mix) would write, exactly, without writing or
// encoding anything (GgufExportOptions::measuredBytes). Throws as they do.
std::uint64_t measureGgufResult(const io::Checkpoint& source, const MethodResult& result, GgufExportOptions options);

// The metadata key of a mixed GGUF's report: the JSON quantscope_report.json holds for the other
// formats (settings, mixed_precision allocation, result), as a string.
inline constexpr std::string_view kGgufReportKey = "quantscope.report";

// A mix of ggml types per linear (a budget's allocation over ggml-type candidates, MethodResult::mixed)
// as one GGUF file: each linear in the type the allocation gave it, bytes as the Job measured them;
// the linears left dense, token_embd and output in F16, vectors in F32. Throws qs::Error naming the
// module whose method is not a ggml type (GPTQ, FP8, ... have no GGUF tensor type), and as writeGguf.
std::filesystem::path writeGgufMixResult(const io::Checkpoint& source, const MethodResult& result,
                                         const std::filesystem::path& destination, GgufExportOptions options,
                                         const ProgressCallback& progress, const CancelToken& cancel);

}  // namespace qs::pipeline
