// dlopen of llama.cpp's libraries (llama_libraries.h). The prototypes below are written from
// llama.h, ggml.h and gguf.h of the llama.cpp release the package ships (see package.json).
#include "llama_libraries.h"

#include <cstdlib>
#include <cstring>
#include <regex>
#include <stdexcept>

#include <dlfcn.h>

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

// llama.h: struct llama_model_quantize_params.
struct QuantizeParamsBuffer {
    std::int32_t nthread;
    std::int32_t ftype;
    std::int32_t outputTensorType;
    std::int32_t tokenEmbeddingType;
    bool allowRequantize, quantizeOutputTensor, onlyCopy, pure, keepSplit, dryRun;
    const void* imatrix;  // const llama_model_imatrix_data*, terminated by a null name
    const void* kvOverrides;
    const void* ttOverrides;
    const std::int32_t* pruneLayers;
    std::size_t maxBufSize;
};

// llama.h: struct llama_model_imatrix_data.
struct ImatrixData {
    const char* name;
    const float* data;
    std::size_t size;
};

// ggml.h: struct ggml_init_params.
struct GgmlInitParams {
    std::size_t memSize;
    void* memBuffer;
    bool noAlloc;
};

// common/imatrix-loader.h: struct common_imatrix_entry and common_imatrix (C++, the same standard
// library), for common_imatrix_load.
struct CommonImatrixEntry {
    std::vector<float> sums;
    std::vector<std::int64_t> counts;
};
struct CommonImatrix {
    std::map<std::string, CommonImatrixEntry> entries;
    std::vector<std::string> datasets;
    std::int32_t chunkCount = 0;
    std::int32_t chunkSize = 0;
    bool isLegacy = false;
    bool hasMetadata = false;
};

void* openLibrary(const std::string& name) {
    // ggml-base's static initializer installs a terminate handler that prints a backtrace through gdb, and
    // asserts that it is not installed yet; in this process (beside oneDNN's libraries) that assert fired
    // now and then while the library was being opened. The handler is no part of what is judged:
    // GGML_NO_BACKTRACE, ggml's own switch, leaves it out.
    ::setenv("GGML_NO_BACKTRACE", "1", 0);
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
void collect(int, const char* text, void* log) { static_cast<std::string*>(log)->append(text); }

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
    if (traits == nullptr || traits->toFloat == nullptr)
        throw std::runtime_error("ggml has no to_float for type " + std::to_string(type));
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
        const std::int64_t* ne =
            symbol<const std::int64_t* (*)(const void*, std::int64_t)>(handle_, "gguf_get_tensor_ne")(ctx, i);
        std::memcpy(t.ne, ne, sizeof t.ne);
        t.offset = symbol<std::size_t (*)(const void*, std::int64_t)>(handle_, "gguf_get_tensor_offset")(ctx, i);
        t.size = symbol<std::size_t (*)(const void*, std::int64_t)>(handle_, "gguf_get_tensor_size")(ctx, i);
        v.tensors.push_back(t);
    }
    release(ctx);
    return v;
}

void GgmlBase::writeSparseGguf(const std::filesystem::path& path, const std::vector<SparseKey>& keys,
                               const std::vector<SparseTensor>& tensors) const {
    void* ctx = symbol<void* (*)(GgmlInitParams)>(
        handle_, "ggml_init")(GgmlInitParams{tensors.size() * 1024 + 4096, nullptr, true});
    void* gguf = symbol<void* (*)()>(handle_, "gguf_init_empty")();
    for (const SparseKey& k : keys) {
        if (k.kind == SparseKey::Text)
            symbol<void (*)(void*, const char*, const char*)>(handle_, "gguf_set_val_str")(gguf, k.key.c_str(),
                                                                                           k.text.c_str());
        else if (k.kind == SparseKey::U32)
            symbol<void (*)(void*, const char*, std::uint32_t)>(handle_, "gguf_set_val_u32")(gguf, k.key.c_str(),
                                                                                             k.u32);
        else
            symbol<void (*)(void*, const char*, float)>(handle_, "gguf_set_val_f32")(gguf, k.key.c_str(), k.f32);
    }
    const auto new1d = symbol<void* (*)(void*, int, std::int64_t)>(handle_, "ggml_new_tensor_1d");
    const auto new2d = symbol<void* (*)(void*, int, std::int64_t, std::int64_t)>(handle_, "ggml_new_tensor_2d");
    const auto setName = symbol<void* (*)(void*, const char*)>(handle_, "ggml_set_name");
    const auto add = symbol<void (*)(void*, const void*)>(handle_, "gguf_add_tensor");
    for (const SparseTensor& t : tensors) {
        void* tensor =
            t.shape.size() == 1 ? new1d(ctx, t.type, t.shape[0]) : new2d(ctx, t.type, t.shape[1], t.shape[0]);
        setName(tensor, t.name.c_str());
        add(gguf, tensor);
    }
    const bool written =
        symbol<bool (*)(const void*, const char*, bool)>(handle_, "gguf_write_to_file")(gguf, path.c_str(), true);
    const std::size_t meta = symbol<std::size_t (*)(const void*)>(handle_, "gguf_get_meta_size")(gguf);
    const std::int64_t last = static_cast<std::int64_t>(tensors.size()) - 1;
    const std::size_t end =
        last < 0 ? 0
                 : symbol<std::size_t (*)(const void*, std::int64_t)>(handle_, "gguf_get_tensor_offset")(gguf, last) +
                       symbol<std::size_t (*)(const void*, std::int64_t)>(handle_, "gguf_get_tensor_size")(gguf, last);
    symbol<void (*)(void*)>(handle_, "gguf_free")(gguf);
    symbol<void (*)(void*)>(handle_, "ggml_free")(ctx);
    if (!written) throw std::runtime_error("ggml could not write " + path.string());
    std::filesystem::resize_file(path, meta + (end + 31) / 32 * 32);  // the data: a hole
}

LlamaQuantizer::LlamaQuantizer() : handle_(openLibrary("libllama.v0.4.0.so")) {
    symbol<void (*)()>(handle_, "llama_backend_init")();
    // The quantizer reports every tensor on stderr; the test prints its own summary.
    symbol<void (*)(void (*)(int, const char*, void*), void*)>(handle_, "llama_log_set")(quiet, nullptr);
}

LlamaQuantizer::~LlamaQuantizer() { ::dlclose(handle_); }

void LlamaQuantizer::quantize(const std::filesystem::path& in, const std::filesystem::path& out, int fileType,
                              int threads, const std::map<std::string, std::vector<float>>* imatrix) const {
    QuantizeParamsBuffer params = symbol<QuantizeParamsBuffer (*)()>(handle_, "llama_model_quantize_default_params")();
    params.nthread = threads;
    params.ftype = fileType;
    std::vector<ImatrixData> entries;
    if (imatrix != nullptr) {
        for (const auto& [name, values] : *imatrix) entries.push_back({name.c_str(), values.data(), values.size()});
        entries.push_back({nullptr, nullptr, 0});
        params.imatrix = entries.data();
    }
    const auto run = symbol<std::uint32_t (*)(const char*, const char*, const QuantizeParamsBuffer*)>(
        handle_, "llama_model_quantize");
    if (run(in.c_str(), out.c_str(), &params) != 0)
        throw std::runtime_error("llama_model_quantize failed on " + in.string() + " (ftype " +
                                 std::to_string(fileType) + ")");
}

std::map<std::string, std::string> LlamaQuantizer::dryRunTypes(const std::filesystem::path& in, int fileType) const {
    QuantizeParamsBuffer params = symbol<QuantizeParamsBuffer (*)()>(handle_, "llama_model_quantize_default_params")();
    params.nthread = 1;
    params.ftype = fileType;
    params.dryRun = true;
    std::string log;
    const auto setLog = symbol<void (*)(void (*)(int, const char*, void*), void*)>(handle_, "llama_log_set");
    setLog(collect, &log);
    const auto run = symbol<std::uint32_t (*)(const char*, const char*, const QuantizeParamsBuffer*)>(
        handle_, "llama_model_quantize");
    const std::uint32_t status = run(in.c_str(), "", &params);
    setLog(quiet, nullptr);
    if (status != 0) throw std::runtime_error("llama_model_quantize --dry-run failed on " + in.string() + ": " + log);
    // Per tensor: "[   3/ 291]  NAME - [ne...], type =    f32, size = A MiB -> B MiB (q4_K)", or
    // "size = A MiB" alone when the type stays.
    static const std::regex line(
        R"(\[\s*\d+/\s*\d+\]\s+(\S+)\s+- \[[^\]]*\], type =\s*(\S+), size =[^\n(]*(?:\((\w+)\))?)");
    std::map<std::string, std::string> types;
    for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it)
        types[(*it)[1]] = (*it)[3].matched ? std::string((*it)[3]) : std::string((*it)[2]);
    return types;
}

std::map<std::string, std::vector<float>> loadImatrixAsLlamaQuantize(const std::filesystem::path& path,
                                                                     std::vector<std::string>* datasets, int* chunks) {
    void* common = openLibrary("libllama-common.so");
    const auto load = symbol<bool (*)(const std::string&, CommonImatrix&)>(
        common, "_Z19common_imatrix_loadRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEER14common_imatrix");
    CommonImatrix loaded;
    const bool ok = load(path.string(), loaded);
    ::dlclose(common);
    if (!ok) throw std::runtime_error("llama.cpp cannot load the imatrix " + path.string());
    if (!loaded.isLegacy && !loaded.hasMetadata)
        throw std::runtime_error("llama.cpp: missing imatrix metadata in " + path.string());
    // tools/quantize load_imatrix: the GGUF format's sums divided by their counts.
    std::map<std::string, std::vector<float>> out;
    for (const auto& [name, entry] : loaded.entries) {
        auto& e = out[name];
        e.resize(entry.sums.size());
        const std::size_t n = entry.counts.size(), per = n ? entry.sums.size() / n : 0;
        for (std::size_t j = 0; j < n; ++j)
            for (std::size_t i = 0; i < per; ++i) {
                const float count = static_cast<float>(entry.counts[j]);
                e[j * per + i] = count > 0.0f ? entry.sums[j * per + i] / count : 1.0f;
            }
    }
    if (datasets != nullptr) *datasets = loaded.datasets;
    if (chunks != nullptr) *chunks = loaded.chunkCount;
    return out;
}

}  // namespace qs::interop
