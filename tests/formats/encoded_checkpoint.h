#pragma once
// Exports for the 4-bit and trellis encoder tests: what an encoder makes of some linears is written with
// io::CheckpointWriter (tensors, config.json with its quantization_config, its extra files), as the
// exporter does, then opened again for the readers.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "qs/formats/linear_encoder.h"
#include "qs/io/checkpoint.h"

namespace qs::formats::test {

class EncodedExport {
public:
    // Encodes every linear; `dense` linears get a small BF16 weight and go into the scheme's denseLinears.
    EncodedExport(const std::string& name, const LinearEncoder& encoder,
                  const std::vector<std::pair<std::string, const quant::QuantizedLinear*>>& linears,
                  std::vector<std::string> dense = {"lm_head"});
    ~EncodedExport();
    EncodedExport(const EncodedExport&) = delete;
    EncodedExport& operator=(const EncodedExport&) = delete;

    const io::Checkpoint& checkpoint() const { return checkpoint_; }
    const nlohmann::json& quantizationConfig() const { return config_; }
    const std::vector<EncodedTensor>& tensors() const { return tensors_; }
    // The encoded tensor of that name; fails the test (and throws) when there is none.
    const EncodedTensor& tensor(const std::string& name) const;
    const std::filesystem::path& dir() const { return dir_; }

private:
    std::filesystem::path dir_;
    std::vector<EncodedTensor> tensors_;
    nlohmann::json config_;
    io::Checkpoint checkpoint_;
};

// Every element has the same bit pattern (so -0 and +0 differ, and NaNs must match).
void expectBitIdentical(const MatrixF& actual, const MatrixF& expected);

// The stored values of an F32 tensor.
std::vector<float> storedF32(const EncodedTensor& t);

}  // namespace qs::formats::test
