#pragma once
// Checks, before a long quantization, that its results could be exported: for each distinct linear
// shape of the checkpoint, a result of the method's layout (a cheap stand-in with the same code
// kind, bits, groups and scale grid) is put to the encoder's refusal(). The exporter checks the real
// results again before writing, and that they were quantized from the checkpoint it copies.
#include <string>

#include "qs/formats/linear_encoder.h"
#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_fingerprint.h"
#include "qs/pipeline/job_result.h"
#include "qs/pipeline/method_spec.h"

namespace qs::pipeline {

// The encoder that would write `method`'s results: `format` by name, or the method's default.
// Throws qs::Error for an unknown name or a method without a writer.
const formats::LinearEncoder& encoderForMethod(const MethodSpec& method, const std::string& format);

// Why no safetensors layout holds a gpt-oss checkpoint's quantized experts (vLLM loads them stacked, as
// gpt-oss's own MXFP4 or dense), or "" for any other model. Every export of a result checks it first.
std::string gptOssExpertsRefusal(const io::Checkpoint& source);

// "model.layers.0.mlp.down_proj [256, 768]: K=768 is not a multiple of group size 512", or "" when
// every decoder-layer linear fits (methods whose layout cannot be predicted cheaply pass here).
std::string exportRefusal(const MethodSpec& method, const formats::LinearEncoder& encoder,
                          const io::Checkpoint& checkpoint);

// "" when `result` was quantized from the checkpoint `source` is the fingerprint of, else one line
// naming both: a result written over another checkpoint of the same shapes (a base model and its
// fine-tune) would make a silently mixed model. A result that names no checkpoint is refused too.
std::string sourceMismatch(const MethodResult& result, const io::CheckpointFingerprint& source);

}  // namespace qs::pipeline
