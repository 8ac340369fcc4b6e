#pragma once
// The GGUF edge's names: which Hugging Face family a GGUF general.architecture is, and back, and the
// tensor names of both worlds (the tables live with the families: qs/architectures/gguf_tensor_names.h,
// which the GGUF writer uses with the same overrides). Architectures: GGUF's "llama" is Hugging Face's
// llama and mistral (llama.cpp's converter writes Mistral as llama, and Mixtral as llama with experts).
// The mapping is applied at the edge (Checkpoint::open, the GGUF exporter) so that everything above
// sees one naming.
#include <optional>
#include <string>
#include <string_view>

namespace qs::io {

struct HfArchitecture {
    std::string modelType;     // config.json model_type
    std::string architecture;  // config.json architectures[0]
};

// The Hugging Face architecture a GGUF general.architecture stands for, or nullopt when QuantScope
// does not run it.
std::optional<HfArchitecture> hfArchitectureOfGguf(std::string_view ggufArchitecture);
// The GGUF general.architecture llama.cpp uses for a config.json model_type, or nullopt.
std::optional<std::string> ggufArchitectureOfModelType(std::string_view modelType);
// Whether llama.cpp's converter interleaves the q/k rows of this GGUF architecture for its rotary
// kernel (llama's "normal" rope); the others use the Hugging Face order ("neox" rope).
bool ggufArchitecturePermutesQk(std::string_view ggufArchitecture);

// The Hugging Face name of a GGUF tensor name, or nullopt when it has none (e.g. rope_freqs.weight).
std::optional<std::string> hfNameOfGgufTensor(std::string_view ggufName);
// The GGUF name of a Hugging Face tensor name, or nullopt when llama.cpp has no such tensor.
std::optional<std::string> ggufNameOfHfTensor(std::string_view hfName);

}  // namespace qs::io
