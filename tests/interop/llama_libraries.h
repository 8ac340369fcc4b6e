#pragma once
// llama.cpp's own libraries from the node-llama-cpp package (tests/interop/node_modules), opened with
// dlopen for the interop tests: libggml-base (its GGUF parser and each type's dequantize_row_*) and
// libllama (llama_model_quantize). Only the C functions used here are declared, as llama.h and
// ggml.h / gguf.h of the matching llama.cpp source declare them.
#include <cstdint>
#include <filesystem>
#include <map>
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
    GgmlBase();  // throws std::runtime_error when the library or a symbol is missing
    ~GgmlBase();
    GgmlBase(const GgmlBase&) = delete;
    GgmlBase& operator=(const GgmlBase&) = delete;

    // ggml's to_float of `type` (its dequantize_row_*), or false when ggml has none.
    bool hasToFloat(int type) const;
    void toFloat(int type, const void* src, float* dst, std::int64_t n) const;
    // Throws std::runtime_error when ggml refuses the file.
    GgmlGgufView readGguf(const std::filesystem::path& path) const;

    // A GGUF whose metadata and tensor infos ggml's own writer writes (gguf_write_to_file, only_meta)
    // and whose data is a hole of the right size (a sparse file): a model of any shape for a dry run
    // of llama-quantize. Tensors are {name, ggml type, row-major shape}.
    struct SparseTensor {
        std::string name;
        int type = 0;
        std::vector<std::int64_t> shape;
    };
    struct SparseKey {
        std::string key;
        std::string text;  // the value of a Text key
        std::uint32_t u32 = 0;
        float f32 = 0;
        enum Kind { Text, U32, F32 } kind = Text;
    };
    void writeSparseGguf(const std::filesystem::path& path, const std::vector<SparseKey>& keys,
                         const std::vector<SparseTensor>& tensors) const;

private:
    void* handle_ = nullptr;
};

class LlamaQuantizer {
public:
    LlamaQuantizer();  // throws std::runtime_error when the library or a symbol is missing
    ~LlamaQuantizer();
    LlamaQuantizer(const LlamaQuantizer&) = delete;
    LlamaQuantizer& operator=(const LlamaQuantizer&) = delete;

    // llama-quantize IN OUT FTYPE: `fileType` is a llama_ftype (7 Q8_0, 15 Q4_K_M, 18 Q6_K, 30 IQ4_XS).
    // `imatrix` (tensor name -> importance, already divided by the counts as llama-quantize divides
    // them) is passed as llama-quantize --imatrix passes it. Throws std::runtime_error when llama.cpp
    // reports a failure.
    void quantize(const std::filesystem::path& in, const std::filesystem::path& out, int fileType, int threads,
                  const std::map<std::string, std::vector<float>>* imatrix = nullptr) const;
    // llama-quantize --dry-run: the type it would give each tensor, read from its log.
    std::map<std::string, std::string> dryRunTypes(const std::filesystem::path& in, int fileType) const;

private:
    void* handle_ = nullptr;
};

// llama-quantize's reading of an imatrix file: common_imatrix_load of libllama-common, then the
// division by the counts of tools/quantize (load_imatrix). Throws std::runtime_error when
// llama.cpp refuses the file; `datasets` and `chunks` receive its metadata.
std::map<std::string, std::vector<float>> loadImatrixAsLlamaQuantize(const std::filesystem::path& path,
                                                                     std::vector<std::string>* datasets = nullptr,
                                                                     int* chunks = nullptr);

}  // namespace qs::interop
