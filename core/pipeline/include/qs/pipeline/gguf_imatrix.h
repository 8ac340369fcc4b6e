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
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "qs/model/model_config.h"
#include "qs/pipeline/job_result.h"
#include "qs/quant/ggml_linear.h"

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

// The imatrix entries (llama.cpp's tensor names) that hold linear `module` of decoder layer `layer`, and
// its row in them: the linear's own ("blk.3.attn_q.weight", row 0), or an expert's stacked tensor of its
// kind with the expert's row (gpt-oss's gate_up_proj feeds two: ffn_gate_exps and ffn_up_exps).
struct ImatrixPlace {
    std::vector<std::string> names;
    int row = 0;
    int rows = 1;  // the entry's matrices: the experts of a stacked tensor, else 1
};
ImatrixPlace imatrixPlaceOf(const model::ModelConfig& config, int layer, std::string_view module);

// An importance matrix from a file, as llama-quantize --imatrix reads it (tools/quantize): the GGUF
// format above, or the legacy binary one of older llama-imatrix builds (.dat: per entry its name, the
// number of chunks and Σx²/count × chunks per column; the dataset's name at the end).
class Imatrix {
public:
    // Throws qs::Error naming the file when it is neither format or is malformed (sums without counts,
    // rows of different widths, a truncated entry).
    static Imatrix read(const std::filesystem::path& path);

    struct Entry {
        std::int64_t cols = 0;
        std::vector<float> sums;    // [rows, cols]
        std::vector<float> counts;  // [rows]; legacy entries: the chunks, the sums scaled to match
    };
    const std::map<std::string, Entry, std::less<>>& entries() const { return entries_; }
    const ImatrixInfo& info() const { return info_; }
    const std::filesystem::path& path() const { return path_; }

    // Linear `module` of decoder layer `layer` weighted as llama-quantize weighs it: Σx²/count per input
    // column of its entry's row (a row no token reached: 1 for every column, as llama-quantize reads it);
    // empty when the file has no entry for it. Throws qs::Error when the entry's width is not `cols`.
    quant::InputImportance importanceOf(const model::ModelConfig& config, int layer, std::string_view module,
                                        std::int64_t cols) const;
    // A hash of every entry's name and values (a work folder's identity of the plan).
    std::uint64_t fingerprint() const;

private:
    std::filesystem::path path_;
    ImatrixInfo info_;
    std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace qs::pipeline
