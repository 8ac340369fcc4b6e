#include "qs/formats/rounding_error.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "qs/error.h"
#include "qs/formats/detect.h"

namespace qs::formats {
namespace {

using Shape = std::pair<std::int64_t, std::int64_t>;

std::string shapeText(const Shape& s) { return std::to_string(s.first) + " x " + std::to_string(s.second); }

// The [out, in] of linear `prefix` in `checkpoint` from its headers: a quantized linear's as detect()
// states it, a dense one's "<prefix>.weight"; nullopt when it has neither.
std::optional<Shape> linearShape(const FormatInfo& format, const io::Checkpoint& checkpoint,
                                 const std::string& prefix) {
    for (const LayerQuantInfo& l : format.layers)
        if (l.ref.prefix == prefix && l.ref.expert < 0 && l.scheme != "dense") return Shape{l.rows, l.cols};
    const io::CheckpointTensor* weight = checkpoint.find(prefix + ".weight");
    if (!weight || weight->info->shape.size() != 2) return std::nullopt;
    return Shape{weight->info->shape[0], weight->info->shape[1]};
}

}  // namespace

void checkOriginal(const FormatInfo& quantized, const io::Checkpoint& quantizedCheckpoint,
                   const io::Checkpoint& original) {
    const FormatInfo originalFormat = detect(original);
    const std::string here = quantizedCheckpoint.root().string();
    const std::string there = original.root().string();
    int compared = 0;
    for (const LayerQuantInfo& l : quantized.layers) {
        if (l.scheme == "dense" || l.ref.expert >= 0) continue;
        const auto shape = linearShape(originalFormat, original, l.ref.prefix);
        if (!shape) throw Error(there + " has no linear " + l.ref.prefix + " (quantized in " + here + ")");
        if (*shape != Shape{l.rows, l.cols})
            throw Error(l.ref.prefix + " is " + shapeText({l.rows, l.cols}) + " in " + here + " but " +
                        shapeText(*shape) + " in " + there);
        ++compared;
    }
    if (compared == 0) throw Error(here + " has no quantized linear to compare with " + there);
}

RoundingError roundingError(const LinearReader& quantized, const LinearReader& original, const LinearRef& ref) {
    return roundingError(quantized.decode(ref).weight, original.decode(ref).weight, ref);
}

RoundingError roundingError(const MatrixF& q, const MatrixF& o, const LinearRef& ref) {
    if (q.rows() != o.rows() || q.cols() != o.cols())
        throw Error(ref.label() + " is " + shapeText({q.rows(), q.cols()}) + " quantized but " +
                    shapeText({o.rows(), o.cols()}) + " in the original");
    RoundingError e;
    e.rows = q.rows();
    e.cols = q.cols();
    e.difference.resize(static_cast<std::size_t>(q.size()));
    double sumSquares = 0.0, originalSquares = 0.0;
    for (std::int64_t r = 0; r < e.rows; ++r) {
        for (std::int64_t c = 0; c < e.cols; ++c) {
            const float d = q(r, c) - o(r, c);
            e.difference[static_cast<std::size_t>(r * e.cols + c)] = d;
            sumSquares += double(d) * d;
            originalSquares += double(o(r, c)) * o(r, c);
        }
    }
    const double n = std::max<double>(1.0, static_cast<double>(q.size()));
    e.rms = std::sqrt(sumSquares / n);
    e.originalRms = std::sqrt(originalSquares / n);
    return e;
}

}  // namespace qs::formats
