#pragma once
// Private to qs_pipeline: what a Job does for a GGUF method (MethodSpec::gguf()). Each linear is
// encoded to the ggml type llama.cpp's mix gives it, weighted by the calibration's Σx² per input
// column when there is calibration (llama-quantize --imatrix); token_embd and output are encoded as
// the same mix says and the method's model runs on their decoded values, so the KL it measures is
// that of the file writeGgufResult writes.
#include <functional>
#include <memory>
#include <string_view>

#include "qs/cancel_token.h"
#include "qs/io/checkpoint.h"
#include "qs/model/model_config.h"
#include "qs/model/weight_source.h"
#include "qs/pipeline/gguf_export.h"
#include "qs/pipeline/layer_quantizer.h"
#include "qs/pipeline/layer_statistics.h"
#include "qs/pipeline/method_spec.h"
#include "qs/quant/ggml_linear.h"

#include "export_rotation.h"

namespace qs::pipeline {

// llama.cpp's imatrix entry of a linear: Σx² per input column over the `samples` calibration tokens,
// from its H = 2XᵀX/samples. Empty (no weighting) without H.
quant::InputImportance ggufImportance(const MatrixF* h, std::int64_t samples);

// The config a GGUF method's file is planned from: a rotated result's lm_head L diag(g) Q is not its
// embedding E Q, so the file stores output.weight even when the source ties them. Its types are still
// chosen from the source's config (ggufMethodChooser): a tied source's token_embd keeps the output's type
// (Q6_K in a Q4_K_M), as in the file of the unrotated model, where the base type (Q4_K, what llama-quantize
// gives an untied model's token_embd) cost the rotated demo twice its KL.
model::ModelConfig ggufFileConfig(model::ModelConfig config, bool rotated);

// The chooser of `method` (a GGUF method) for this model.
GgufTypeChooser ggufMethodChooser(const MethodSpec& method, const model::ModelConfig& config, bool withImportance);

// A linear's importance from elsewhere than the calibration (an imatrix file): by module and input width.
using LinearImportance = std::function<quant::InputImportance(std::string_view module, std::int64_t cols)>;

// The linears of `layer` (named under `layerPrefix`: ModelConfig::layerPrefix), each in the type `chooser`
// gives the GGUF tensor that stores it (an expert's: its kind's stacked tensor, one type for all experts),
// with importance from `importance` when set, else from `statistics` when it is not empty; releases as
// quantizeLayer does.
QuantizedLayer quantizeGgufLayer(const GgufTypeChooser& chooser, const std::string& layerPrefix, int layer,
                                 model::LayerWeights& weights, LayerStatistics& statistics, const CancelToken& cancel,
                                 LayerRelease release, const LinearImportance& importance = {});

// `inner` with its embedding and lm_head replaced by their values after encoding to the types
// `chooser` gives token_embd and output (the embedding serves as both when tied); `inner` itself when
// both stay F32. `config` is ggufFileConfig's. With `rotation` (a --rotate Job: `inner` is the rotated
// model) the encoded values are the rotated embedding and lm_head the file's writer takes from it too.
std::shared_ptr<const model::WeightSource> ggufEdgeWeights(std::shared_ptr<const model::WeightSource> inner,
                                                           const io::Checkpoint& checkpoint,
                                                           const model::ModelConfig& config,
                                                           const GgufTypeChooser& chooser,
                                                           const ExportRotation* rotation = nullptr);

}  // namespace qs::pipeline
