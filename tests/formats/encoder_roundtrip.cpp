#include "encoder_roundtrip.h"

#include <cstring>
#include <fstream>

#include <unistd.h>

#include "qs/io/checkpoint_writer.h"

namespace qs::formats::test {

std::filesystem::path freshPath(const std::string& name) {
    auto dir = std::filesystem::temp_directory_path() / ("qs_encoder_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    return dir;
}

std::filesystem::path writeEncoded(const std::filesystem::path& dir, const LinearEncoder& encoder,
                                   const std::vector<NamedLinear>& linears) {
    io::CheckpointWriter writer(dir);
    ExportScheme scheme;
    for (const auto& [prefix, q] : linears) {
        scheme.linears.emplace_back(prefix, &q);
        for (const auto& t : encoder.encode(prefix, q)) writer.addTensor(t.name, t.dtype, t.shape, t.bytes);
    }
    scheme.denseLinears = {"lm_head"};
    writer.setConfig({{"model_type", "llama"}, {"quantization_config", encoder.quantizationConfig(scheme)}});
    for (const auto& [file, content] : encoder.extraFiles(scheme)) writer.addJsonFile(file, content);
    return writer.finish();
}

quant::QuantizedLinear withF16Scales(quant::QuantizedLinear q) {
    for (Eigen::Index i = 0; i < q.scales.size(); ++i)
        q.scales.data()[i] = io::f16ToF32(io::f32ToF16(q.scales.data()[i]));
    return q;
}

std::int64_t bitDifferences(const MatrixF& a, const MatrixF& b) {
    std::int64_t n = 0;
    for (Eigen::Index i = 0; i < a.size(); ++i) n += std::memcmp(a.data() + i, b.data() + i, sizeof(float)) != 0;
    return n;
}

std::vector<std::uint32_t> storedWords(const io::Checkpoint& checkpoint, const std::string& name) {
    const auto t = checkpoint.tensor(name);
    std::vector<std::uint32_t> words(t.bytes().size() / 4);
    std::memcpy(words.data(), t.bytes().data(), words.size() * 4);
    return words;
}

nlohmann::json readJson(const std::filesystem::path& file) {
    std::ifstream in(file);
    return nlohmann::json::parse(in);
}

}  // namespace qs::formats::test
