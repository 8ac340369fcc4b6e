#include "stacked_expert.h"

#include <vector>

#include "qs/error.h"
#include "qs/io/shape_text.h"

namespace qs::pipeline {

model::Linear decodeStackedExpert(const io::Checkpoint& checkpoint, const formats::LinearReader& reader,
                                  const std::string& module, int experts, int expert) {
    model::Linear l;
    if (checkpoint.find(module) == nullptr) {
        formats::DecodedLinear d = reader.decode(module, expert);
        l.weight = std::move(d.weight);
        l.bias = Eigen::Map<const VectorF>(d.bias.data(), static_cast<Eigen::Index>(d.bias.size()));
        return l;
    }
    const io::TensorView w = checkpoint.tensor(module);
    const io::TensorView b = checkpoint.tensor(module + "_bias");
    const bool stacked = w.shape().size() == 3 && w.shape()[0] == experts;
    const std::int64_t in = stacked ? w.shape()[1] : 0, out = stacked ? w.shape()[2] : 0;
    if (!stacked || b.shape() != std::vector<std::int64_t>{experts, out})
        throw Error(checkpoint.root().string() + ": tensor '" + module + "' " + io::shapeText(w.shape()) +
                    " with bias " + io::shapeText(b.shape()) + " is not " + std::to_string(experts) +
                    " stacked experts [experts, in, out] with [experts, out] biases");
    MatrixF stored(in, out);
    w.decode(static_cast<std::size_t>(expert * in * out), static_cast<std::size_t>(in * out), stored.data());
    l.weight = stored.transpose();
    l.bias.resize(out);
    b.decode(static_cast<std::size_t>(expert * out), static_cast<std::size_t>(out), l.bias.data());
    return l;
}

}  // namespace qs::pipeline
