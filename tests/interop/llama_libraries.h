#pragma once
// llama.cpp's own libraries from the node-llama-cpp package (tests/interop/node_modules), opened with
// dlopen for the interop tests: libggml-base (its GGUF parser and each type's dequantize_row_*) and
// libllama (llama_model_quantize). Only the C functions used here are declared, as llama.h and
// ggml.h / gguf.h of the matching llama.cpp source declare them.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace qs::interop {

// tests/interop and the folder of the prebuilt CPU binaries.
std::filesystem::path interopDir();
std::filesystem::path llamaBinaries();
// "" when the judge is installed, else the reason and the command that installs it.
std::string missingJudge();

// What ggml's gguf_init_from_file (no_alloc) reads from a file.
struct GgmlGgufView {
    std::uint32_t version = 0;
    std::size_t alignment = 0;
    std::size_t dataOffset = 0;
    std::vector<std::string> keys;
    std::vector<int> keyTypes;
    struct Tensor {
        std::string name;
        int type = 0;
        std::int64_t ne[4] = {1, 1, 1, 1};
        std::size_t offset = 0;
        std::size_t size = 0;
    };
    std::vector<Tensor> tensors;
};

class GgmlBase {
public:
    GgmlBase();   // throws std::runtime_error when the library or a symbol is missing
    ~GgmlBase();
    GgmlBase(const GgmlBase&) = delete;
    GgmlBase& operator=(const GgmlBase&) = delete;

    // ggml's to_float of `type` (its dequantize_row_*), or false when ggml has none.
    bool hasToFloat(int type) const;
    void toFloat(int type, const void* src, float* dst, std::int64_t n) const;
    // Throws std::runtime_error when ggml refuses the file.
    GgmlGgufView readGguf(const std::filesystem::path& path) const;

private:
    void* handle_ = nullptr;
};

class LlamaQuantizer {
public:
    LlamaQuantizer();   // throws std::runtime_error when the library or a symbol is missing
    ~LlamaQuantizer();
    LlamaQuantizer(const LlamaQuantizer&) = delete;
    LlamaQuantizer& operator=(const LlamaQuantizer&) = delete;

    // llama-quantize IN OUT FTYPE: `fileType` is a llama_ftype (7 Q8_0, 15 Q4_K_M, 18 Q6_K, 30 IQ4_XS).
    // Throws std::runtime_error when llama.cpp reports a failure.
    void quantize(const std::filesystem::path& in, const std::filesystem::path& out, int fileType, int threads) const;

private:
    void* handle_ = nullptr;
};

}  // namespace qs::interop
