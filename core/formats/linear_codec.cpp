#include "qs/formats/linear_codec.h"

namespace qs::formats {

std::string LinearRef::label() const { return expert < 0 ? prefix : prefix + "[" + std::to_string(expert) + "]"; }

std::string LayerQuantInfo::summary() const {
    if (!problem.empty()) return "unreadable: " + problem;
    if (scheme == "dense") return "dense " + std::to_string(bits) + "-bit";
    if (scheme == "exl3") return "exl3 " + std::to_string(bits) + "-bit";  // 16x16 trellis tiles, no scales to list
    if (codec == "gguf") return "gguf " + scheme;  // the ggml type (q4_K, ...) says it all: blocks, scales, grids
    std::string s = scheme == "int" ? "int" + std::to_string(bits) : scheme;
    if (granularity == "block")
        s += " block " + std::to_string(blockRows) + "x" + std::to_string(groupSize);
    else if (granularity == "group")
        s += " g" + std::to_string(groupSize);
    else
        s += " per-" + granularity;
    if (actOrder) s += " act-order";
    s += symmetric ? " sym" : " asym";
    return s;
}

}  // namespace qs::formats
