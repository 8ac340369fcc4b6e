#pragma once
// The ggml type of every matrix of a GGUF file's decoder layers: a layer × module kind grid for the GGUF
// tab's map (a Q4_K_M's q4_K with a few q6_K shows at a glance). The kinds are the file's own
// ("blk.N.<kind>.weight" with two or more dimensions: attn_q, ffn_down, ffn_gate_exps, ...), the
// usual projections first in llama.cpp's order, then any other in file order; norms and biases, vectors,
// are left out.
#include <optional>
#include <string>
#include <vector>

#include "qs/io/gguf_file.h"
#include "qs/io/gguf_tensor_names.h"

namespace qs::gui {

struct GgufTypeCell {
    std::string type;      // ggml's name: "q4_K"
    double bitsPerWeight;  // the type's (its block's bits over its elements)
    std::string ggufName;  // "blk.3.attn_v.weight"
    std::string hfName;    // the checkpoint tensor read from it ("" when none)
};

class GgufTypeGrid {
public:
    static GgufTypeGrid fromFile(const io::GgufFile& file, const std::vector<io::GgufTensorName>& names);

    bool empty() const { return layers_ == 0 || kinds_.empty(); }
    int layers() const { return layers_; }  // rows: 0 .. the deepest block
    int kinds() const { return static_cast<int>(kinds_.size()); }
    const std::string& kind(int column) const { return kinds_[static_cast<std::size_t>(column)]; }
    const GgufTypeCell* cell(int layer, int kind) const;  // null where that layer has no such tensor
    double minBits() const;
    double maxBits() const;

private:
    int layers_ = 0;
    std::vector<std::string> kinds_;
    std::vector<std::optional<GgufTypeCell>> cells_;  // [layer * kinds + kind]
};

}  // namespace qs::gui
