#include "checkpoint_warnings.h"

#include <iostream>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/io/checkpoint.h"

namespace qs::cli {

void printCheckpointWarnings(const io::Checkpoint& checkpoint) {
    for (const auto& w : formats::detect(checkpoint).warnings)
        std::cerr << "quantscope-cli: warning: " << sanitizeMessage(w) << '\n';
}

}  // namespace qs::cli
