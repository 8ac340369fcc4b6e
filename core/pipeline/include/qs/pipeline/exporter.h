#pragma once
// Exporter: writes a quantized model as a checkpoint its consumers load. The quantized linears come
// from a MethodResult (one QuantizedLayer per decoder layer); everything else (embeddings, norms,
// lm_head, biases) is copied from the source checkpoint in its own dtype; tokenizer and generation
// files are copied; config.json gains the encoder's quantization_config; quantscope_report.json
// records per linear the method, bits, group, output error, GPTQ loss and time, the calibration and
// evaluation settings, the KL results when they were measured, and the source's quantization when it
// had one (quantized_source.h).
//
// A source that is quantized already (FP8, GPTQ, compressed-tensors, a GGUF of Q8_0 blocks, ...)
// gives a clean checkpoint of the new layout: its quantization_config is replaced, none of the parts
// it stored its linears in (qweight / scales, weight_scale_inv, weight_packed, ...) is copied, nor its
// activation or KV-cache scales, and a linear it stores quantized that the result leaves dense (lm_head,
// a router, what a mix ignores) is written decoded as "<prefix>.weight", in the source's float type
// where that holds every decoded value exactly, else in F32, so that the export holds the weights the
// KL was measured with. A GGUF source's tensors go under their Hugging Face names, decoded, and its
// tokenizer comes from its metadata.
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
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/cancel_token.h"
#include "qs/formats/linear_encoder.h"
#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_writer.h"
#include "qs/pipeline/job_result.h"
#include "qs/progress.h"

namespace qs::pipeline {

struct ExportRequest {
    std::filesystem::path source;       // the checkpoint the result was quantized from (dense, quantized, GGUF)
    std::filesystem::path destination;  // a folder; must not exist unless overwrite
    std::string format;                 // an encoder name (formats::allEncoders); "" = the method's default
    bool overwrite = false;
    nlohmann::json settings = nlohmann::json::object();  // calibration / evaluation settings for the report
};

// Returns the folder written. Throws qs::Error (refused shape, unknown format, another source, I/O)
// or qs::Cancelled.
std::filesystem::path exportCheckpoint(const ExportRequest& request, const MethodResult& result,
                                       const ProgressCallback& progress, const CancelToken& cancel);

// The bytes exportCheckpoint would write for `request` (its destination is not looked at), counted
// without writing anything: each linear encoded (a result on disk with zero codes in place of its own: no
// layer is read back), the kept tensors and JSON files counted as the export gives them. Exact: the
// .safetensors files and the others are as large as the export's. Throws as exportCheckpoint.
io::WrittenBytes measureExport(const ExportRequest& request, const MethodResult& result,
                               const CancelToken& cancel = {});

// Why exportCheckpoint would refuse to write `result` with `encoder`, in one line ("cannot export as
// gptq: model.layers.0.mlp.down_proj: ..."; what the encoder's config cannot state for the whole, such
// as AWQ's one group size), or "" when it would write it: asked before choosing a format (the GUI's
// Export panel, for a mix of methods). Only the source's config is read (its architecture), and of a
// result on disk every layer's codes (a large model's take a while: `cancel` stops it, throwing Cancelled).
std::string exportRefusal(const MethodResult& result, const formats::LinearEncoder& encoder,
                          const CancelToken& cancel = {});

// exportRefusal for each of `encoders`, in their order, from one pass over the result: a result on disk
// is read once for all of them (the Export panel asks for every layout it could offer).
std::vector<std::string> exportRefusals(const MethodResult& result,
                                        const std::vector<const formats::LinearEncoder*>& encoders,
                                        const CancelToken& cancel = {});

// An export that quantizes each linear as the writer reaches it, so that only one linear's codes are
// held at a time (weight_only_quantize.h). `linears` names every linear by its full prefix
// ("model.language_model.layers.0.self_attn.q_proj") with the address of the linear the writer reads
// once `produce(prefix)` has filled it in; `release(prefix)` may then free its codes (the config and the report
// are made at the end from what remains: the headers, scales and measurements). `report()` gives the
// start of quantscope_report.json then. `request.format` names the encoder. A linear the encoder
// refuses stops the export, and nothing is left at the destination.
struct StreamedLinears {
    std::vector<std::pair<std::string, const quant::QuantizedLinear*>> linears;
    std::function<void(const std::string& prefix)> produce;
    std::function<void(const std::string& prefix)> release;
};
std::filesystem::path exportStreamed(const ExportRequest& request, const io::Checkpoint& source,
                                     const StreamedLinears& streamed, const std::function<nlohmann::json()>& report,
                                     const ProgressCallback& progress, const CancelToken& cancel);

}  // namespace qs::pipeline
