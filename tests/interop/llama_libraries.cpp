// dlopen of llama.cpp's libraries (llama_libraries.h). The prototypes below are written from
// llama.h, ggml.h and gguf.h of the llama.cpp release the package ships (see package.json).
#include "llama_libraries.h"

#include <dlfcn.h>

#include <cstring>
#include <stdexcept>

namespace qs::interop {

namespace {

// ggml.h: struct ggml_type_traits (the fields up to to_float).
struct GgmlTypeTraits {
    const char* typeName;
    std::int64_t blockSize;
    std::int64_t blockSizeInterleave;
    std::size_t typeSize;
    bool isQuantized;
    void (*toFloat)(const void* x, float* y, std::int64_t k);
};

// gguf.h: struct gguf_init_params.
struct GgufInitParams {
    bool noAlloc;
    void** ctx;
};

// llama.h: llama_model_quantize_params begins with nthread and ftype; the rest is left as
// llama_model_quantize_default_params returns it. It is received into a buffer larger than the
// struct, so that its exact size does not matter here.
struct QuantizeParamsBuffer {
    std::int32_t nthread;
    std::int32_t ftype;
    unsigned char rest[504];
};

void* openLibrary(const std::string& name) {
    const auto path = llamaBinaries() / name;
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) throw std::runtime_error("cannot open " + path.string() + ": " + ::dlerror());
    return h;
}

template <typename F>
F symbol(void* handle, const char* name) {
    void* s = ::dlsym(handle, name);
    if (s == nullptr) throw std::runtime_error(std::string("llama.cpp library has no ") + name);
    return reinterpret_cast<F>(s);
}

// llama.h: llama_log_set takes a ggml_log_callback, void (*)(enum ggml_log_level, const char*, void*).
void quiet(int, const char*, void*) {}

}  // namespace

std::filesystem::path interopDir() { return QS_INTEROP_DIR; }

std::filesystem::path llamaBinaries() {
    return interopDir() / "node_modules" / "@node-llama-cpp" / "linux-x64" / "bins" / "linux-x64";
}

std::string missingJudge() {
    if (std::filesystem::exists(interopDir() / "node_modules" / "node-llama-cpp" / "package.json") &&
        std::filesystem::exists(llamaBinaries() / "libllama.v0.4.0.so"))
        return "";
    return "llama.cpp (node-llama-cpp) is not installed in " + interopDir().string() +
           "/node_modules: run 'cd tests/interop && npm ci --omit=optional --ignore-scripts --no-audit --no-fund'";
}

GgmlBase::GgmlBase() : handle_(openLibrary("libggml-base.so")) {}
GgmlBase::~GgmlBase() { ::dlclose(handle_); }

bool GgmlBase::hasToFloat(int type) const {
    const auto traits = symbol<const GgmlTypeTraits* (*)(int)>(handle_, "ggml_get_type_traits")(type);
    return traits != nullptr && traits->toFloat != nullptr;
}

void GgmlBase::toFloat(int type, const void* src, float* dst, std::int64_t n) const {
    const auto traits = symbol<const GgmlTypeTraits* (*)(int)>(handle_, "ggml_get_type_traits")(type);
    if (traits == nullptr || traits->toFloat == nullptr) throw std::runtime_error("ggml has no to_float for type " + std::to_string(type));
    traits->toFloat(src, dst, n);
}

GgmlGgufView GgmlBase::readGguf(const std::filesystem::path& path) const {
    const auto init = symbol<void* (*)(const char*, GgufInitParams)>(handle_, "gguf_init_from_file");
    const auto release = symbol<void (*)(void*)>(handle_, "gguf_free");
    void* ctx = init(path.c_str(), GgufInitParams{true, nullptr});
    if (ctx == nullptr) throw std::runtime_error("ggml refuses " + path.string());
    GgmlGgufView v;
    v.version = symbol<std::uint32_t (*)(const void*)>(handle_, "gguf_get_version")(ctx);
    v.alignment = symbol<std::size_t (*)(const void*)>(handle_, "gguf_get_alignment")(ctx);
    v.dataOffset = symbol<std::size_t (*)(const void*)>(handle_, "gguf_get_data_offset")(ctx);
    const auto nKv = symbol<std::int64_t (*)(const void*)>(handle_, "gguf_get_n_kv")(ctx);
    for (std::int64_t i = 0; i < nKv; ++i) {
        v.keys.emplace_back(symbol<const char* (*)(const void*, std::int64_t)>(handle_, "gguf_get_key")(ctx, i));
        v.keyTypes.push_back(symbol<int (*)(const void*, std::int64_t)>(handle_, "gguf_get_kv_type")(ctx, i));
    }
    const auto nTensors = symbol<std::int64_t (*)(const void*)>(handle_, "gguf_get_n_tensors")(ctx);
    for (std::int64_t i = 0; i < nTensors; ++i) {
        GgmlGgufView::Tensor t;
        t.name = symbol<const char* (*)(const void*, std::int64_t)>(handle_, "gguf_get_tensor_name")(ctx, i);
        t.type = symbol<int (*)(const void*, std::int64_t)>(handle_, "gguf_get_tensor_type")(ctx, i);
        const std::int64_t* ne = symbol<const std::int64_t* (*)(const void*, std::int64_t)>(handle_, "gguf_get_tensor_ne")(ctx, i);
        std::memcpy(t.ne, ne, sizeof t.ne);
        t.offset = symbol<std::size_t (*)(const void*, std::int64_t)>(handle_, "gguf_get_tensor_offset")(ctx, i);
        t.size = symbol<std::size_t (*)(const void*, std::int64_t)>(handle_, "gguf_get_tensor_size")(ctx, i);
        v.tensors.push_back(t);
    }
    release(ctx);
    return v;
}

LlamaQuantizer::LlamaQuantizer() : handle_(openLibrary("libllama.v0.4.0.so")) {
    symbol<void (*)()>(handle_, "llama_backend_init")();
    // The quantizer reports every tensor on stderr; the test prints its own summary.
    symbol<void (*)(void (*)(int, const char*, void*), void*)>(handle_, "llama_log_set")(quiet, nullptr);
}

LlamaQuantizer::~LlamaQuantizer() { ::dlclose(handle_); }

void LlamaQuantizer::quantize(const std::filesystem::path& in, const std::filesystem::path& out, int fileType, int threads) const {
    QuantizeParamsBuffer params = symbol<QuantizeParamsBuffer (*)()>(handle_, "llama_model_quantize_default_params")();
    params.nthread = threads;
    params.ftype = fileType;
    const auto run = symbol<std::uint32_t (*)(const char*, const char*, const QuantizeParamsBuffer*)>(handle_, "llama_model_quantize");
    if (run(in.c_str(), out.c_str(), &params) != 0)
        throw std::runtime_error("llama_model_quantize failed on " + in.string() + " (ftype " + std::to_string(fileType) + ")");
}

}  // namespace qs::interop
