#include "encoded_checkpoint.h"

#include <bit>
#include <cstring>
#include <stdexcept>

#include <unistd.h>

#include "qs/io/checkpoint_writer.h"

namespace qs::formats::test {

namespace {

std::filesystem::path freshDir(const std::string& name) {
    const auto dir =
        std::filesystem::temp_directory_path() / ("qs_encoded_export_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    return dir;
}

io::Checkpoint write(const std::filesystem::path& dir, const std::vector<EncodedTensor>& tensors,
                     const nlohmann::json& config, const std::vector<std::pair<std::string, nlohmann::json>>& files,
                     const std::vector<std::string>& dense) {
    io::CheckpointWriter writer(dir);
    for (const auto& t : tensors) writer.addTensor(t.name, t.dtype, t.shape, t.bytes);
    const std::vector<float> denseWeight = {0.5f, -1.0f, 2.0f, 0.25f, 1.5f, -0.75f, 3.0f, 1.0f};
    for (const auto& prefix : dense) writer.addTensorF32(prefix + ".weight", io::DType::BF16, {2, 4}, denseWeight);
    writer.setConfig(
        {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"quantization_config", config}});
    for (const auto& [fileName, content] : files) writer.addJsonFile(fileName, content);
    return io::Checkpoint::open(writer.finish());
}

std::vector<EncodedTensor> encodeAll(
    const LinearEncoder& encoder, const std::vector<std::pair<std::string, const quant::QuantizedLinear*>>& linears) {
    std::vector<EncodedTensor> all;
    for (const auto& [prefix, q] : linears)
        for (auto& t : encoder.encode(prefix, *q)) all.push_back(std::move(t));
    return all;
}

ExportScheme schemeOf(const std::vector<std::pair<std::string, const quant::QuantizedLinear*>>& linears,
                      std::vector<std::string> dense) {
    ExportScheme scheme;
    scheme.linears = linears;
    scheme.denseLinears = std::move(dense);
    return scheme;
}

}  // namespace

EncodedExport::EncodedExport(const std::string& name, const LinearEncoder& encoder,
                             const std::vector<std::pair<std::string, const quant::QuantizedLinear*>>& linears,
                             std::vector<std::string> dense)
    : dir_(freshDir(name)),
      tensors_(encodeAll(encoder, linears)),
      config_(encoder.quantizationConfig(schemeOf(linears, dense))),
      checkpoint_(write(dir_, tensors_, config_, encoder.extraFiles(schemeOf(linears, dense)), dense)) {}

EncodedExport::~EncodedExport() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

const EncodedTensor& EncodedExport::tensor(const std::string& name) const {
    for (const auto& t : tensors_)
        if (t.name == name) return t;
    ADD_FAILURE() << "the encoder wrote no tensor '" << name << "'";
    throw std::logic_error("missing tensor " + name);
}

void expectBitIdentical(const MatrixF& actual, const MatrixF& expected) {
    ASSERT_EQ(actual.rows(), expected.rows());
    ASSERT_EQ(actual.cols(), expected.cols());
    int failures = 0;
    for (Eigen::Index i = 0; i < actual.size() && failures < 5; ++i)
        if (std::bit_cast<std::uint32_t>(actual.data()[i]) != std::bit_cast<std::uint32_t>(expected.data()[i])) {
            ADD_FAILURE() << "element " << i << " (row " << i / actual.cols() << ", column " << i % actual.cols()
                          << "): read back " << actual.data()[i] << ", dequantize() gives " << expected.data()[i];
            ++failures;
        }
}

std::vector<float> storedF32(const EncodedTensor& t) {
    if (t.dtype != io::DType::F32) throw std::logic_error(t.name + " is not F32");
    std::vector<float> v(t.bytes.size() / 4);
    std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
    return v;
}

}  // namespace qs::formats::test
