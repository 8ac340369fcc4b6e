#pragma once
// Exporter: writes a quantized model as a checkpoint its consumers load. The quantized linears come
// from a MethodResult (one QuantizedLayer per decoder layer); everything else (embeddings, norms,
// lm_head, biases) is copied from the source checkpoint in its own dtype; tokenizer and generation
// files are copied; config.json gains the encoder's quantization_config; quantscope_report.json
// records per linear the method, bits, group, output error, GPTQ loss and time, the calibration and
// evaluation settings, and the KL results when they were measured.
//
// AWQ results are folded on the way out as AutoAWQ does: 1/s goes into input_layernorm (q/k/v),
// post_attention_layernorm (gate/up), v_proj's output rows (o_proj) and up_proj's (down_proj).
//
// Every linear is checked against the encoder (LinearEncoder::refusal) before anything is written,
// and the result against the source: it must have been quantized from that very checkpoint (its
// fingerprint, export_check.h's sourceMismatch), not from another of the same shapes; a refused
// export leaves nothing behind. Writing goes through io::CheckpointWriter (temporary
// folder, renamed into place).
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/cancel_token.h"
#include "qs/io/checkpoint.h"
#include "qs/pipeline/job_result.h"
#include "qs/progress.h"

namespace qs::pipeline {

struct ExportRequest {
    std::filesystem::path source;        // the original (dense) checkpoint the result was made from
    std::filesystem::path destination;   // a folder; must not exist unless overwrite
    std::string format;                  // an encoder name (formats::allEncoders); "" = the method's default
    bool overwrite = false;
    nlohmann::json settings = nlohmann::json::object();   // calibration / evaluation settings for the report
};

// Returns the folder written. Throws qs::Error (refused shape, unknown format, another source, I/O)
// or qs::Cancelled.
std::filesystem::path exportCheckpoint(const ExportRequest& request, const MethodResult& result,
                                       const ProgressCallback& progress, const CancelToken& cancel);

// The same for linears quantized without a Job (weight_only_quantize.h), named by their full prefix
// ("model.language_model.layers.0.self_attn.q_proj") in the source `source`; `report` is the start of
// quantscope_report.json (the format, source, settings and linears are added).
std::filesystem::path exportLinears(const ExportRequest& request, const io::Checkpoint& source,
                                    const std::vector<std::pair<std::string, const quant::QuantizedLinear*>>& linears,
                                    nlohmann::json report, const ProgressCallback& progress, const CancelToken& cancel);

}  // namespace qs::pipeline
