#include "export_rotation.h"

#include "qs/architectures/module_names.h"
#include "qs/error.h"
#include "qs/io/tensor_name.h"

namespace qs::pipeline {
namespace {

namespace modules = architectures::modules;

std::vector<float> valuesOfMatrix(const MatrixF& m) { return {m.data(), m.data() + m.size()}; }
std::vector<float> valuesOfVector(const VectorF& v) { return {v.data(), v.data() + v.size()}; }

}  // namespace

ExportRotation::ExportRotation(const io::Checkpoint& source, std::uint64_t seed)
    : source_(source), config_(model::ModelConfig::fromCheckpoint(source)), rotation_(config_, seed) {
    const std::string& prefix = config_.arch.tensorPrefix;
    parts_[prefix + "embed_tokens.weight"] = {Kind::Embedding};
    parts_[prefix + "norm.weight"] = {Kind::Norm};
    parts_[config_.arch.lmHead] = {Kind::LmHead};
    for (int i = 0; i < config_.numLayers; ++i) {
        const std::string p = config_.layerPrefix(i);
        parts_[p + config_.arch.inputNorm + ".weight"] = {Kind::Norm, i};
        parts_[p + config_.arch.preMlpNorm + ".weight"] = {Kind::Norm, i};
        parts_[p + std::string(modules::kVProj) + ".bias"] = {Kind::ValueBias, i};
        parts_[p + std::string(modules::kOProj) + ".bias"] = {Kind::WriterBias, i};
        parts_[p + std::string(modules::kDownProj) + ".bias"] = {Kind::WriterBias, i};
        if (config_.isMoeLayer(i)) parts_[p + config_.moe.names.router() + ".weight"] = {Kind::Router, i};
    }
}

MatrixF ExportRotation::matrix(const std::string& name) const { return source_.tensor(name).toMatrix(); }

VectorF ExportRotation::vector(const std::string& name) const {
    const std::vector<float> values = source_.tensor(name).toF32();
    return Eigen::Map<const VectorF>(values.data(), static_cast<Eigen::Index>(values.size()));
}

VectorF ExportRotation::preMlpNorm(int layer) const {
    return vector(config_.layerPrefix(layer) + config_.arch.preMlpNorm + ".weight");
}

std::vector<float> ExportRotation::lmHead() const {
    const std::string& prefix = config_.arch.tensorPrefix;
    MatrixF l = matrix(config_.tieWordEmbeddings ? prefix + "embed_tokens.weight" : config_.arch.lmHead);
    rotation_.rotateLmHead(l, vector(prefix + "norm.weight"));
    return valuesOfMatrix(l);
}

std::optional<std::vector<float>> ExportRotation::valuesOf(const std::string& name) const {
    const auto it = parts_.find(name);
    if (it == parts_.end()) {
        const io::TensorName parsed = io::parseTensorName(name);
        if (parsed.layer >= 0 && parsed.role == io::TensorRole::Linear && parsed.part == "weight")
            throw Error("cannot export: --rotate: " + name +
                        " is left dense, and the rotation covers only the linears "
                        "it quantized");
        return std::nullopt;
    }
    switch (it->second.kind) {
        case Kind::Embedding: {
            MatrixF e = matrix(name);
            rotation_.rotateEmbeddingRows(e);
            return valuesOfMatrix(e);
        }
        case Kind::LmHead: return lmHead();
        case Kind::Norm: return valuesOfVector(rotation_.foldedNorm(vector(name)));
        case Kind::Router: {
            model::Linear router;
            router.weight = matrix(name);
            rotation_.rotateReader(router, preMlpNorm(it->second.layer));
            return valuesOfMatrix(router.weight);
        }
        case Kind::ValueBias: {
            VectorF b = vector(name);
            rotation_.rotateValueBias(b);
            return valuesOfVector(b);
        }
        case Kind::WriterBias: {
            VectorF b = vector(name);
            rotation_.rotateWriterBias(b);
            return valuesOfVector(b);
        }
    }
    return std::nullopt;
}

}  // namespace qs::pipeline
