#include "qs/quant/ggml_linear.h"

#include <string>

#include "qs/error.h"
#include "qs/quant/ggml_encode.h"

namespace qs::quant {

QuantizedLinear quantizeGgml(const MatrixF& w, io::GgmlType type, const InputImportance& importance) {
    const auto& traits = io::ggmlTypeTraits(type);
    if (!ggmlEncodes(type)) throw Error("ggml type " + std::string(traits.name) + " cannot be encoded by QuantScope");
    if (w.cols() % traits.blockElements != 0)
        throw Error("a [" + std::to_string(w.rows()) + ", " + std::to_string(w.cols()) +
                    "] weight is not whole blocks of " + std::string(traits.name) + " (" +
                    std::to_string(traits.blockElements) + " per row block)");
    if (!importance.sumSquares.empty() && importance.sumSquares.size() != static_cast<std::size_t>(w.cols()))
        throw Error("importance has " + std::to_string(importance.sumSquares.size()) + " columns for a weight of " +
                    std::to_string(w.cols()));
    QuantizedLinear q;
    q.method = Method::Ggml;
    q.codeKind = CodeKind::GgmlBlocks;
    q.rows = w.rows();
    q.cols = w.cols();
    q.bits = static_cast<int>(traits.bitsPerWeight());
    q.groupSize = traits.blockElements;
    q.blockCols = traits.blockElements;
    q.ggmlType = type;
    q.blocks.resize(static_cast<std::size_t>(w.rows()) * io::ggmlRowBytes(type, w.cols()));
    // llama-quantize divides the imatrix sums by their count before quantizing (tools/quantize); the
    // same mean is passed here so that the encoders see the same floats.
    std::vector<float> mean;
    if (!importance.sumSquares.empty() && importance.count > 0) {
        mean.resize(importance.sumSquares.size());
        const float count = static_cast<float>(importance.count);
        for (std::size_t i = 0; i < mean.size(); ++i) mean[i] = importance.sumSquares[i] / count;
    }
    ggmlEncodeRows(type, w.data(), q.blocks.data(), w.rows(), w.cols(), mean.empty() ? nullptr : mean.data());
    q.inputSumSquares = importance.sumSquares;
    q.inputCount = importance.count;
    return q;
}

}  // namespace qs::quant
