#pragma once
// Progress reports of long operations: stage, step i of n, fraction and a message. The callback
// may be called from worker threads; receivers forward it (Qt: queued signal; CLI: stderr bar).
#include <functional>
#include <string>

namespace qs {

struct Progress {
    std::string stage;      // e.g. "calibrate", "quantize", "evaluate", "export", "stats"
    int step = 0;           // e.g. layer i (1-based)
    int steps = 0;          // e.g. N layers; 0 when unknown
    double fraction = 0.0;  // overall 0..1
    std::string message;
};

using ProgressCallback = std::function<void(const Progress&)>;

}  // namespace qs
