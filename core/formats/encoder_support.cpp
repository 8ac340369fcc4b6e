#include "encoder_support.h"

#include "qs/error.h"

namespace qs::formats::detail {

void requireEncodable(const LinearEncoder& encoder, const std::string& prefix, const quant::QuantizedLinear& q) {
    if (const std::string why = encoder.refusal(q); !why.empty())
        throw Error(prefix + ": the " + std::string(encoder.name()) + " layout cannot store it: " + why);
}

std::string shapeOf(const quant::QuantizedLinear& q) {
    return "[" + std::to_string(q.rows) + ", " + std::to_string(q.cols) + "]";
}

std::string torchDTypeName(io::DType dtype) {
    switch (dtype) {
        case io::DType::BF16: return "bfloat16";
        case io::DType::F16: return "float16";
        case io::DType::F32: return "float32";
        default:
            throw Error("export: the source dtype " + std::string(io::dtypeName(dtype)) +
                        " is not a floating-point weight dtype");
    }
}

}  // namespace qs::formats::detail
