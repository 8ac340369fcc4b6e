// Strict safetensors parsing (the checks of huggingface/safetensors tensor.rs, docs/formats/safetensors.md)
// and the memory-mapped SafetensorsFile built on it.
#include "qs/io/safetensors_file.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "qs/error.h"
#include "qs/io/gguf_file.h"
#include "qs/io/json_file.h"
#include "qs/io/json_value.h"

#include "mapped_file.h"

namespace qs::io {

namespace {

using nlohmann::json;

constexpr std::uint64_t kMaxHeaderSize = 100'000'000;  // MAX_HEADER_SIZE of tensor.rs
constexpr std::size_t kMaxTensorNameBytes = 1024;      // real names stay under 200

// dtypes the format defines that QuantScope does not handle, told apart from plain typos.
constexpr std::string_view kUnsupportedDTypes[] = {"F4", "F6_E2M3", "F6_E3M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "C64"};

class Problems {
public:
    explicit Problems(std::string_view file) : file_(file) {}
    [[noreturn]] void file(const std::string& what) const { throw Error(file_ + ": " + what); }
    [[noreturn]] void tensor(const std::string& name, const std::string& what) const {
        throw Error(file_ + ": tensor '" + name + "': " + what);
    }

private:
    std::string file_;
};

std::string offsetsText(std::uint64_t b, std::uint64_t e) {
    return "data_offsets [" + std::to_string(b) + ", " + std::to_string(e) + "]";
}

std::string shapeText(const TensorInfo& t) {
    std::string s = std::string(dtypeName(t.dtype)) + " [";
    for (std::size_t i = 0; i < t.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(t.shape[i]);
    return s + "]";
}

// Parses the JSON text, rejecting duplicate keys (which nlohmann would silently overwrite) and
// absurd nesting (which a valid header never has).
json parseHeaderJson(std::span<const std::byte> text, std::string_view displayName) {
    const auto* begin = reinterpret_cast<const char*>(text.data());
    return parseJson(std::string_view(begin, text.size()), std::string(displayName) + ": header",
                     JsonLimits{.maxBytes = kMaxHeaderSize, .maxDepth = kMaxJsonDepth, .rejectDuplicateKeys = true});
}

std::map<std::string, std::string> parseMetadata(const json& j, const Problems& problems) {
    std::map<std::string, std::string> out;
    if (j.is_null()) return out;  // MLX writes "__metadata__": null
    if (!j.is_object()) problems.file("__metadata__ must be an object of strings, but it is " + jsonKind(j));
    for (const auto& [key, value] : j.items()) {
        if (!value.is_string())
            problems.file("__metadata__ value of '" + key + "' must be a string, but it is " + jsonKind(value));
        out.emplace(key, value.get<std::string>());
    }
    return out;
}

std::uint64_t unsignedValue(const json& j, const std::string& tensor, const std::string& field,
                            const Problems& problems) {
    if (!j.is_number_unsigned())
        problems.tensor(tensor,
                        field + " must hold non-negative integers, but holds " + jsonKind(j) + " (" + j.dump() + ")");
    return j.get<std::uint64_t>();
}

DType parseEntryDType(const json& entry, const std::string& name, const Problems& problems) {
    const auto it = entry.find("dtype");
    if (it == entry.end()) problems.tensor(name, "has no \"dtype\"");
    if (!it->is_string()) problems.tensor(name, "\"dtype\" must be a string, but it is " + jsonKind(*it));
    const auto& text = it->get_ref<const std::string&>();
    if (const auto t = parseDType(text)) return *t;
    if (std::find(std::begin(kUnsupportedDTypes), std::end(kUnsupportedDTypes), text) != std::end(kUnsupportedDTypes))
        problems.tensor(name, "dtype '" + text + "' is valid safetensors but not supported by QuantScope");
    problems.tensor(name, "unknown dtype '" + text + "'");
}

// Shape, element count and byte size, with every product checked for overflow.
void parseEntryShape(const json& entry, TensorInfo& info, const Problems& problems) {
    const auto it = entry.find("shape");
    if (it == entry.end()) problems.tensor(info.name, "has no \"shape\"");
    if (!it->is_array()) problems.tensor(info.name, "\"shape\" must be an array, but it is " + jsonKind(*it));
    std::uint64_t elements = 1;
    for (const auto& d : *it) {
        const std::uint64_t dim = unsignedValue(d, info.name, "\"shape\"", problems);
        if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
            __builtin_mul_overflow(elements, dim, &elements) ||
            elements > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            problems.tensor(info.name, "shape " + it->dump() + " has more elements than fit in 63 bits");
        info.shape.push_back(static_cast<std::int64_t>(dim));
    }
    std::uint64_t bytes = 0;
    if (__builtin_mul_overflow(elements, dtypeSize(info.dtype), &bytes))
        problems.tensor(info.name, "shape " + it->dump() + " needs more bytes than fit in 64 bits");
}

void parseEntryOffsets(const json& entry, TensorInfo& info, const Problems& problems) {
    const auto it = entry.find("data_offsets");
    if (it == entry.end()) problems.tensor(info.name, "has no \"data_offsets\"");
    if (!it->is_array() || it->size() != 2)
        problems.tensor(info.name,
                        "\"data_offsets\" must be an array of two integers [begin, end], but it is " + it->dump());
    info.begin = unsignedValue((*it)[0], info.name, "\"data_offsets\"", problems);
    info.end = unsignedValue((*it)[1], info.name, "\"data_offsets\"", problems);
}

// Names are printed one per line and quoted in messages: a control character could forge lines, and
// no module path is kilobytes long.
void checkName(const std::string& name, const Problems& problems) {
    if (name.empty()) problems.file("has a tensor with an empty name");
    if (name.size() > kMaxTensorNameBytes)
        problems.tensor(name, "name is " + std::to_string(name.size()) + " bytes long, more than the " +
                                  std::to_string(kMaxTensorNameBytes) + " QuantScope accepts");
    for (const char c : name)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) problems.tensor(name, "name holds a control character");
}

TensorInfo parseEntry(const std::string& name, const json& entry, const Problems& problems) {
    checkName(name, problems);
    if (!entry.is_object()) problems.tensor(name, "entry must be an object, but it is " + jsonKind(entry));
    TensorInfo info;
    info.name = name;
    info.dtype = parseEntryDType(entry, name, problems);
    parseEntryShape(entry, info, problems);
    parseEntryOffsets(entry, info, problems);
    return info;
}

// Metadata::validate of tensor.rs: in offset order the tensors tile [0, dataLength) exactly, and
// each holds exactly prod(shape) * dtype size bytes.
void validateLayout(const std::vector<TensorInfo>& tensors, const Problems& problems) {
    std::uint64_t expectedBegin = 0;
    const TensorInfo* previous = nullptr;
    for (const auto& t : tensors) {
        if (t.end < t.begin) problems.tensor(t.name, offsetsText(t.begin, t.end) + " end before they begin");
        if (t.begin != expectedBegin) {
            if (previous == nullptr)
                problems.tensor(t.name, offsetsText(t.begin, t.end) +
                                            " do not start at 0: the first tensor's data must begin at byte 0");
            if (t.begin > expectedBegin)
                problems.tensor(t.name, offsetsText(t.begin, t.end) + " leave a hole of " +
                                            std::to_string(t.begin - expectedBegin) + " bytes after tensor '" +
                                            previous->name + "', which ends at " + std::to_string(expectedBegin));
            problems.tensor(t.name, offsetsText(t.begin, t.end) + " overlap tensor '" + previous->name +
                                        "', which ends at " + std::to_string(expectedBegin));
        }
        const std::uint64_t need = static_cast<std::uint64_t>(t.numel()) * dtypeSize(t.dtype);
        if (t.byteSize() != need)
            problems.tensor(t.name, offsetsText(t.begin, t.end) + " hold " + std::to_string(t.byteSize()) +
                                        " bytes but " + shapeText(t) + " needs " + std::to_string(need));
        expectedBegin = t.end;
        previous = &t;
    }
}

void validateFileLength(const SafetensorsHeader& h, std::uint64_t fileSize, const Problems& problems) {
    const std::uint64_t buffer = fileSize - 8 - h.headerLength;
    const std::uint64_t used = h.dataLength();
    if (used > buffer) {
        const auto& last = h.tensors.back();
        problems.tensor(last.name, offsetsText(last.begin, last.end) +
                                       " run past the end of the file: the data buffer holds only " +
                                       std::to_string(buffer) + " bytes");
    }
    if (used < buffer)
        problems.file("has " + std::to_string(buffer - used) +
                      " trailing bytes after the last tensor's data (the tensors use " + std::to_string(used) +
                      " of the " + std::to_string(buffer) + " data bytes)");
}

}  // namespace

SafetensorsHeader parseSafetensors(std::span<const std::byte> file, std::string_view displayName) {
    const Problems problems(displayName);
    // GGUF's magic read as a safetensors header length would be an absurd 14 GB: name the format instead.
    if (hasGgufMagic(file))
        problems.file(
            "is a GGUF file (llama.cpp's format), not safetensors; open it as a checkpoint, which reads GGUF");
    if (file.size() < 8)
        problems.file("file is " + std::to_string(file.size()) + " bytes, too short to hold the 8-byte header length");
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<std::uint8_t>(file[static_cast<std::size_t>(i)]);
    if (n > kMaxHeaderSize)
        problems.file("header length " + std::to_string(n) + " exceeds the limit of " + std::to_string(kMaxHeaderSize) +
                      " bytes");
    if (n > file.size() - 8)
        problems.file("header length " + std::to_string(n) + " runs past the end of the file (" +
                      std::to_string(file.size()) + " bytes)");

    // safetensors pads a header with spaces only; a NUL would end nlohmann's parse there, silently
    // dropping what follows, where the reference reader (serde_json) refuses the file.
    const auto headerBytes = file.subspan(8, n);
    if (const auto nul = std::find(headerBytes.begin(), headerBytes.end(), std::byte{0}); nul != headerBytes.end())
        problems.file("header holds a NUL byte at byte " + std::to_string(8 + (nul - headerBytes.begin())) +
                      " of the file; safetensors pads its header with spaces only");
    const json j = parseHeaderJson(headerBytes, displayName);
    if (!j.is_object()) problems.file("header must be a JSON object, but it is " + jsonKind(j));

    SafetensorsHeader header;
    header.headerLength = n;
    for (const auto& [key, value] : j.items()) {
        if (key == "__metadata__")
            header.metadata = parseMetadata(value, problems);
        else
            header.tensors.push_back(parseEntry(key, value, problems));
    }
    std::sort(header.tensors.begin(), header.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
        return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
    });
    validateLayout(header.tensors, problems);
    validateFileLength(header, file.size(), problems);
    return header;
}

struct SafetensorsFile::Impl {
    explicit Impl(const std::filesystem::path& p) : path(p), map(p), header(parseSafetensors(map.bytes(), p.string())) {
        for (std::size_t i = 0; i < header.tensors.size(); ++i) byName.emplace(header.tensors[i].name, i);
        data = map.bytes().subspan(8 + header.headerLength);
    }
    std::filesystem::path path;
    detail::MappedFile map;
    SafetensorsHeader header;
    std::map<std::string, std::size_t, std::less<>> byName;
    std::span<const std::byte> data;  // the byte buffer after the header
};

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
    return SafetensorsFile(std::make_shared<const Impl>(path));
}

const std::filesystem::path& SafetensorsFile::path() const { return impl_->path; }
std::uint64_t SafetensorsFile::fileSize() const { return impl_->map.size(); }
const SafetensorsHeader& SafetensorsFile::header() const { return impl_->header; }
std::span<const std::byte> SafetensorsFile::headerBytes() const {
    return impl_->map.bytes().first(8 + impl_->header.headerLength);
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
    const auto it = impl_->byName.find(name);
    return it == impl_->byName.end() ? nullptr : &impl_->header.tensors[it->second];
}

TensorView SafetensorsFile::tensor(std::string_view name) const {
    const TensorInfo* info = find(name);
    if (info == nullptr) throw Error(impl_->path.string() + ": no tensor named '" + std::string(name) + "'");
    return view(*info);
}

TensorView SafetensorsFile::view(const TensorInfo& info) const {
    return TensorView(info, impl_->data.subspan(info.begin, info.byteSize()));
}

}  // namespace qs::io
