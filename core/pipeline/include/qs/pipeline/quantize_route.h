#pragma once
// Where a quantize run's result goes, decided once for every front end: a checkpoint folder in a serving
// layout (the encoders of qs_formats), one GGUF file (llama.cpp's methods), or, for a family whose experts
// are stacked tensors (gpt-oss), the family's own MXFP4 layout written from the weights alone.
#include <filesystem>
#include <string>

#include "qs/io/checkpoint.h"
#include "qs/pipeline/method_spec.h"

namespace qs::pipeline {

enum class QuantizeRoute { Checkpoint, GgufFile, StackedExpertsMxfp4 };

// `method` (nullptr: a mix of methods) written to `out` with `format` ("" = the method's default).
// Throws qs::Error when the three disagree: a GGUF method asked for another format or a destination that is
// not a .gguf file, --format gguf or a .gguf destination for a method llama.cpp does not run, or a
// stacked-experts model with a method or format its engines do not load (stackedExpertsRefusal).
QuantizeRoute quantizeRoute(const io::Checkpoint& source, const MethodSpec* method, const std::string& format,
                            const std::filesystem::path& out);

}  // namespace qs::pipeline
