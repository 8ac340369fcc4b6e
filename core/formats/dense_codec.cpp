// Dense linears (F32/F16/BF16/F64 `weight`): decoded as they are, so that callers can treat every
// linear of a partly quantized checkpoint alike.
#include "qs/io/dtype.h"
#include "qs/io/tensor_name.h"

#include "codecs.h"
#include "tensor_access.h"

namespace qs::formats::detail {

namespace {

// A rank-2 float weight that is not an embedding table. Names io does not recognise (routers,
// experts of other architectures) count as linears: every [out, in] matrix can be decoded.
bool isDenseLinearWeight(const io::CheckpointTensor& t) {
    if (t.info->shape.size() != 2 || !io::isDenseFloat(t.info->dtype)) return false;
    return t.naming.role != io::TensorRole::Embedding && t.naming.role != io::TensorRole::Norm;
}

class DenseCodec final : public LinearCodec {
public:
    std::string_view name() const override { return "dense"; }

    std::vector<LinearRef> linears(const io::Checkpoint& checkpoint) const override {
        return refsWithSuffix(checkpoint, ".weight", isDenseLinearWeight);
    }

    LayerQuantInfo describe(const io::Checkpoint& checkpoint, const nlohmann::json&,
                            const LinearRef& ref) const override {
        requireUnstacked(checkpoint, ref, name());
        const auto w = requireTensor(checkpoint, ref.prefix + ".weight", "a dense linear");
        requireRank(checkpoint, w, 2);
        LayerQuantInfo info;
        info.ref = ref;
        info.codec = "dense";
        info.scheme = "dense";
        info.bits = static_cast<int>(io::dtypeSize(w.dtype()) * 8);
        info.granularity = "tensor";
        info.rows = w.shape()[0];
        info.cols = w.shape()[1];
        return info;
    }

    DecodedLinear decode(const io::Checkpoint& checkpoint, const nlohmann::json&, const LinearRef& ref) const override {
        requireUnstacked(checkpoint, ref, name());
        const auto w = requireTensor(checkpoint, ref.prefix + ".weight", "a dense linear");
        requireRank(checkpoint, w, 2);
        requireDtype(checkpoint, w, {io::DType::F32, io::DType::F16, io::DType::BF16, io::DType::F64});
        DecodedLinear d;
        d.ref = ref;
        d.weight = w.toMatrix();
        d.partsExact = false;  // there are no quantized parts
        d.parts.rows = d.weight.rows();
        d.parts.cols = d.weight.cols();
        d.bias = readBias(checkpoint, ref, d.weight.rows());
        return d;
    }
};

}  // namespace

const LinearCodec& denseCodec() {
    static const DenseCodec codec;
    return codec;
}

}  // namespace qs::formats::detail
