#pragma once
// Private to qs_pipeline: what llama.cpp's graph for a family's architecture fixes (Family::ggufFixed) and
// a config spells otherwise. Such a config would run as another model there, so its GGUF export is refused.
#include <string>

#include "qs/architectures/family.h"
#include "qs/model/model_config.h"

namespace qs::pipeline {

// Throws qs::Error naming `source` and the value llama.cpp would use instead.
void requireGgufExpressible(const architectures::Family& family, const model::ModelConfig& config,
                            const std::string& source);

}  // namespace qs::pipeline
