#pragma once
// The calibration a GGUF method was quantized with, written as llama.cpp's importance matrix: the
// GGUF imatrix format llama-imatrix writes and llama-quantize --imatrix reads (tools/imatrix,
// common/imatrix-loader.cpp). Per linear, under its GGUF name: "<name>.in_sum2" (F32 [1, in], Σx² per
// input column over the calibration tokens) and "<name>.counts" (F32 [1, 1], the number of tokens);
// general.type "imatrix", imatrix.datasets, imatrix.chunk_count and imatrix.chunk_size. A MoE layer's
// experts are one entry per stacked tensor (blk.N.ffn_{gate,up,down}_exps.weight), a row per expert:
// in_sum2 [experts, in] and counts [experts, 1] (an expert no token reached: zeros).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "qs/model/model_config.h"
#include "qs/pipeline/job_result.h"

namespace qs::pipeline {

struct ImatrixInfo {
    std::vector<std::string> datasets;  // the calibration files
    std::uint32_t chunkCount = 0;       // calibration sequences
    std::uint32_t chunkSize = 0;        // tokens per sequence
};

// `config`: the model the result was quantized from (its experts' names). Throws qs::Error when the
// result's linears carry no importance (not a GGUF method, or no calibration), when `destination`
// exists and !overwrite, and for I/O; leaves nothing behind then.
std::filesystem::path writeImatrix(const MethodResult& result, const model::ModelConfig& config,
                                   const std::filesystem::path& destination, const ImatrixInfo& info,
                                   bool overwrite = false);

}  // namespace qs::pipeline
