// GgufFile: the memory-mapped file and its parsed header; tensor views point into the mapping.
#include "qs/io/gguf_file.h"

#include <map>

#include <unistd.h>

#include "qs/error.h"
#include "qs/io/regular_file.h"

#include "mapped_file.h"

namespace qs::io {

bool isGgufFile(const std::filesystem::path& path) {
    // Only a regular file can be one: a FIFO must not block this peek (the safetensors reader that
    // gets it instead refuses it with a message).
    try {
        const RegularFile file(path);
        char magic[4] = {};
        return ::pread(file.fd(), magic, 4, 0) == 4 && hasGgufMagic(std::as_bytes(std::span<const char>(magic, 4)));
    } catch (const Error&) {
        return false;
    }
}

struct GgufFile::Impl {
    explicit Impl(const std::filesystem::path& p) : path(p), map(p), header(parseGguf(map.bytes(), p.string())) {
        for (std::size_t i = 0; i < header.tensors.size(); ++i) byName.emplace(header.tensors[i].name, i);
        data = map.bytes().subspan(header.dataOffset);
    }
    std::filesystem::path path;
    detail::MappedFile map;
    GgufHeader header;
    std::map<std::string, std::size_t, std::less<>> byName;
    std::span<const std::byte> data;  // the tensor data section
};

GgufFile GgufFile::open(const std::filesystem::path& path) { return GgufFile(std::make_shared<const Impl>(path)); }

const std::filesystem::path& GgufFile::path() const { return impl_->path; }
std::uint64_t GgufFile::fileSize() const { return impl_->map.size(); }
const GgufHeader& GgufFile::header() const { return impl_->header; }

const TensorInfo* GgufFile::find(std::string_view name) const {
    const auto it = impl_->byName.find(name);
    return it == impl_->byName.end() ? nullptr : &impl_->header.tensors[it->second];
}

TensorView GgufFile::tensor(std::string_view name) const {
    const TensorInfo* info = find(name);
    if (info == nullptr) throw Error(impl_->path.string() + ": no tensor named '" + std::string(name) + "'");
    return view(*info);
}

TensorView GgufFile::view(const TensorInfo& info) const {
    if (info.end < info.begin || info.end > impl_->data.size())
        throw Error(impl_->path.string() + ": tensor '" + info.name + "' lies outside the data section");
    return TensorView(info, impl_->data.subspan(info.begin, info.byteSize()));
}

}  // namespace qs::io
