#pragma once
// What a loader would pass over with a warning (formats::FormatInfo::warnings: tensors that name no
// decoder layer, a bitsandbytes type the quant_state overrides), said on stderr before a command's
// work, one "quantscope-cli: warning:" line each. inspect prints the same lines with its own report.
namespace qs::io {
class Checkpoint;
}

namespace qs::cli {

void printCheckpointWarnings(const io::Checkpoint& checkpoint);

}  // namespace qs::cli
