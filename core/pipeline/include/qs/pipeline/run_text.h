#pragma once
// Which text a run reads when the user names none: the checkpoint's own calibration.txt / eval.txt
// (the demo ships them), else the bundled demo's (bundledResource). The CLI's compare, quantize and
// eval and the GUI all ask here, so that every face falls back the same way.
#include <filesystem>

#include "qs/io/checkpoint.h"

namespace qs::pipeline {

enum class TextRole { Calibration, Evaluation };

// `given` when not empty, else the role's file beside the checkpoint, else the bundled one. Throws
// qs::Error when there is none.
std::filesystem::path resolveRunText(TextRole role, const std::filesystem::path& given,
                                     const io::Checkpoint& checkpoint);

}  // namespace qs::pipeline
