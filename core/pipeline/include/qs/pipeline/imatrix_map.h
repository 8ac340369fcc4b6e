#pragma once
// An importance matrix (llama.cpp's imatrix, Imatrix::read) laid out for the GUI: each entry of a
// decoder layer as a cell of a layer × kind map ("blk.3.attn_q.weight": layer 3, kind attn_q) holding
// its mean importance, what llama-quantize weighs a column's squared error by (Σx²/count), averaged
// over the entry's columns (and the experts of a stacked entry a token reached); how many of a model's
// linears it has an entry for; and one linear's importance per input column.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "qs/io/checkpoint.h"
#include "qs/model/model_config.h"
#include "qs/pipeline/gguf_imatrix.h"

namespace qs::pipeline {

struct ImatrixCell {
    int layer = 0;
    std::size_t kind = 0;         // index into ImatrixMap::kinds
    std::string entry;            // "blk.3.attn_q.weight"
    double meanImportance = 0.0;  // mean over columns (and reached experts) of Σx²/count; 0 when no token reached it
    std::size_t rows = 1;         // the experts of a stacked entry, else 1
};

struct ImatrixMap {
    std::vector<std::string> kinds;  // "attn_q", "ffn_down_exps", ... in the order first met by layer
    int layers = 0;                  // 1 + the deepest layer an entry names
    std::vector<ImatrixCell> cells;
    std::vector<std::string> otherEntries;  // entries of no decoder layer ("output.weight")
    const ImatrixCell* cellAt(int layer, std::size_t kind) const;
};

ImatrixMap imatrixMap(const Imatrix& imatrix);

// The model's decoder linears (by layer and module) that the imatrix has an entry for, out of all of them;
// `firstMissing`: the entry its first linear would need, when it has none.
struct ImatrixCoverage {
    std::size_t linears = 0;
    std::size_t covered = 0;
    std::string firstWanted;  // the entry of the model's first decoder linear
};
ImatrixCoverage imatrixCoverage(const Imatrix& imatrix, const io::Checkpoint& checkpoint,
                                const model::ModelConfig& config);

// Linear `module` of decoder layer `layer`: Σx²/count per input column as llama-quantize weighs it (its
// expert's row of a stacked entry); empty when the imatrix has no entry for it.
std::vector<float> columnImportance(const Imatrix& imatrix, const model::ModelConfig& config, int layer,
                                    std::string_view module);

}  // namespace qs::pipeline
