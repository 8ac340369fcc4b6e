// dlopen of ggml's base library and look-up of its quantization functions by name.
#include "ggml_reference.h"

#include <cstdlib>
#include <filesystem>

#include <dlfcn.h>

namespace qs::interop {
namespace {

using DequantizeRow = void (*)(const void* src, float* dst, std::int64_t n);
using QuantizeRowRef = void (*)(const float* src, void* dst, std::int64_t n);
using Quantize = std::size_t (*)(const float* src, void* dst, std::int64_t nrows, std::int64_t nPerRow,
                                 const float* importance);
using QuantizeInit = void (*)(std::uint32_t type);

std::string libraryPath() {
    if (const char* env = std::getenv("QS_GGML_LIBRARY"); env && *env) return env;
    return QS_GGML_LIBRARY;
}

std::string typeName(io::GgmlType type) { return std::string(io::ggmlTypeTraits(type).name); }

}  // namespace

const GgmlReference& GgmlReference::get() {
    static const GgmlReference instance;
    return instance;
}

GgmlReference::GgmlReference() {
    const std::string path = libraryPath();
    if (!std::filesystem::exists(path)) {
        error_ = "ggml's library " + path + " is missing; " + kGgmlInstallHint;
        return;
    }
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) error_ = "cannot load " + path + ": " + dlerror() + "; " + kGgmlInstallHint;
}

std::string GgmlReference::path() const { return libraryPath(); }

void* GgmlReference::symbol(const std::string& name) const { return handle_ ? dlsym(handle_, name.c_str()) : nullptr; }

bool GgmlReference::dequantizeRow(io::GgmlType type, const std::uint8_t* src, float* dst, std::int64_t n) const {
    auto fn = reinterpret_cast<DequantizeRow>(symbol("dequantize_row_" + typeName(type)));
    if (!fn) return false;
    fn(src, dst, n);
    return true;
}

bool GgmlReference::quantizeRowRef(io::GgmlType type, const float* src, std::uint8_t* dst, std::int64_t n) const {
    auto fn = reinterpret_cast<QuantizeRowRef>(symbol("quantize_row_" + typeName(type) + "_ref"));
    if (!fn) return false;
    fn(src, dst, n);
    return true;
}

bool GgmlReference::quantize(io::GgmlType type, const float* src, std::uint8_t* dst, std::int64_t nrows,
                             std::int64_t nPerRow, const float* importance) const {
    auto fn = reinterpret_cast<Quantize>(symbol("quantize_" + typeName(type)));
    auto init = reinterpret_cast<QuantizeInit>(symbol("ggml_quantize_init"));
    if (!fn || !init) return false;
    init(static_cast<std::uint32_t>(type));  // builds the IQ grids' search tables; a no-op for the rest
    fn(src, dst, nrows, nPerRow, importance);
    return true;
}

}  // namespace qs::interop
