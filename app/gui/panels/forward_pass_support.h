#pragma once
// What the open checkpoint's architecture lets the Quantize panel do. The panel's job quantizes and
// then measures every method's KL, which needs QuantScope to run the model's forward pass; an
// architecture it does not run (an unknown model_type, a broken config) can still be quantized by the
// weight-only methods, but only by the CLI's `quantize --weights-only` (pipeline::exportWeightsOnly):
// the GUI has no weights-only run, and says so instead of offering one.
#include <string>

#include <QString>

#include "qs/io/checkpoint.h"

namespace qs::gui {

// "" when QuantScope runs the checkpoint's forward pass; else the model config's one-line reason
// ("config.json: model_type 'mamba' is not supported (...)").
QString forwardPassRefusal(const io::Checkpoint& checkpoint);

// Why the method row named `method` ("gptq4", "q4_k_m") is off for a checkpoint without a forward pass:
// the core's own reason (it reads activations, or writes GGUF); "" for the weight-only methods.
QString methodRefusalWithoutForwardPass(const std::string& method);

// Start's reason on such a checkpoint: why there is no forward pass, and the CLI command that quantizes
// it from the weights alone.
QString startRefusalWithoutForwardPass(const QString& forwardPassRefusal);

}  // namespace qs::gui
