#include "qs/formats/quantization_diff.h"

#include <cstring>
#include <map>

#include "qs/error.h"
#include "qs/formats/rounding_error.h"
#include "qs/formats/stored_bits.h"

namespace qs::formats {
namespace {

bool isQuantized(const LayerQuantInfo& l) { return l.scheme != "dense" && l.ref.expert < 0; }

bool quantizes(const LinearReader& reader, const std::string& prefix) {
    for (const LayerQuantInfo& l : reader.format().layers)
        if (l.ref.prefix == prefix && isQuantized(l)) return true;
    return false;
}

// What `reader` stores `linear` as: its quantized layer's scheme, or the dense weight's element type.
std::string typeOf(const LinearReader& reader, const std::string& prefix) {
    for (const LayerQuantInfo& l : reader.format().layers)
        if (l.ref.prefix == prefix && l.ref.expert < 0) return l.summary();
    const io::CheckpointTensor* weight = reader.checkpoint().find(prefix + ".weight");
    return weight ? "dense " + weight->info->typeName() : "dense";
}

// The linears quantized in either, by name, with their [out, in] (checkSameModel made them agree).
std::map<std::string, const LayerQuantInfo*> quantizedInEither(const LinearReader& a, const LinearReader& b) {
    std::map<std::string, const LayerQuantInfo*> linears;
    for (const LinearReader* r : {&a, &b})
        for (const LayerQuantInfo& l : r->format().layers)
            if (isQuantized(l)) linears.emplace(l.ref.prefix, &l);
    return linears;
}

bool sameBits(const MatrixF& x, const MatrixF& y) {
    return x.rows() == y.rows() && x.cols() == y.cols() &&
           std::memcmp(x.data(), y.data(), sizeof(float) * static_cast<std::size_t>(x.size())) == 0;
}

// The two files' stored bytes, counted once for every linear.
struct Storage {
    StoredBytes a, b;
};

LinearDiff diffLinear(const LinearReader& a, const LinearReader& b, const LinearReader* original,
                      const Storage& storage, const LayerQuantInfo& layer) {
    LinearDiff d;
    d.ref = layer.ref;
    d.rows = layer.rows;
    d.cols = layer.cols;
    d.typeA = typeOf(a, layer.ref.prefix);
    d.typeB = typeOf(b, layer.ref.prefix);
    d.quantizedA = quantizes(a, layer.ref.prefix);
    d.quantizedB = quantizes(b, layer.ref.prefix);
    d.bitsA = storage.a.bitsPerWeight(layer.ref.prefix, layer.rows, layer.cols);
    d.bitsB = storage.b.bitsPerWeight(layer.ref.prefix, layer.rows, layer.cols);
    const MatrixF decodedA = a.decode(layer.ref).weight;
    const MatrixF decodedB = b.decode(layer.ref).weight;
    d.rmsAMinusB = roundingError(decodedA, decodedB, layer.ref).rms;
    d.differs = !sameBits(decodedA, decodedB);
    if (original) {
        const MatrixF o = original->decode(layer.ref).weight;
        d.errorA = roundingError(decodedA, o, layer.ref).rms;
        d.errorB = roundingError(decodedB, o, layer.ref).rms;
    }
    return d;
}

// Sums of a size-weighted mean: Σ value · weights and Σ weights.
struct WeightedMean {
    double sum = 0.0;
    double weights = 0.0;
    void add(double value, double w) {
        sum += value * w;
        weights += w;
    }
    double value() const { return weights > 0.0 ? sum / weights : 0.0; }
};

DiffSideSummary summarizeSide(const QuantizationDiff& diff, bool LinearDiff::*quantized, double LinearDiff::*bits,
                              std::optional<double> LinearDiff::*error) {
    DiffSideSummary side;
    WeightedMean bitsMean, errorMean;
    for (const LinearDiff& d : diff.linears) {
        const double size = static_cast<double>(d.rows) * static_cast<double>(d.cols);
        if (d.*quantized) {
            ++side.quantizedLinears;
            bitsMean.add(d.*bits, size);
        }
        if (d.*error) errorMean.add(*(d.*error), size);
    }
    side.bitsPerWeight = bitsMean.value();
    if (diff.withOriginal) side.meanError = errorMean.value();
    return side;
}

}  // namespace

QuantizationDiffSummary summarizeDiff(const QuantizationDiff& diff) {
    QuantizationDiffSummary s;
    s.linears = static_cast<int>(diff.linears.size());
    for (const LinearDiff& d : diff.linears) s.differing += d.differs ? 1 : 0;
    s.a = summarizeSide(diff, &LinearDiff::quantizedA, &LinearDiff::bitsA, &LinearDiff::errorA);
    s.b = summarizeSide(diff, &LinearDiff::quantizedB, &LinearDiff::bitsB, &LinearDiff::errorB);
    return s;
}

void checkSameModel(const LinearReader& a, const LinearReader& b) {
    const std::string nameA = a.checkpoint().root().string();
    const std::string nameB = b.checkpoint().root().string();
    try {
        checkOriginal(a.format(), a.checkpoint(), b.checkpoint());
        checkOriginal(b.format(), b.checkpoint(), a.checkpoint());
    } catch (const Error& e) {
        throw Error(nameB + " is not a quantization of the model " + nameA + " quantizes: " + e.what());
    }
}

QuantizationDiff diffQuantizations(const LinearReader& a, const LinearReader& b, const LinearReader* original,
                                   const ProgressCallback& progress, const CancelToken& cancel) {
    checkSameModel(a, b);
    if (original) {
        checkOriginal(a.format(), a.checkpoint(), original->checkpoint());
        checkOriginal(b.format(), b.checkpoint(), original->checkpoint());
    }
    QuantizationDiff diff;
    diff.withOriginal = original != nullptr;
    const auto linears = quantizedInEither(a, b);
    const Storage storage{StoredBytes(a.checkpoint()), StoredBytes(b.checkpoint())};
    const int steps = static_cast<int>(linears.size());
    for (const auto& [prefix, layer] : linears) {
        cancel.throwIfCancelled();
        const int step = static_cast<int>(diff.linears.size()) + 1;
        if (progress) progress({"compare", step, steps, double(step - 1) / steps, "decoding " + prefix});
        diff.linears.push_back(diffLinear(a, b, original, storage, *layer));
    }
    return diff;
}

}  // namespace qs::formats
