// Strict GGUF parsing (the layout of ggml's gguf.cpp, docs/formats/gguf.md): header, metadata,
// tensor infos and the aligned data section, with every count, length and offset checked against
// the bytes that are there before anything is allocated for it.
#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include "qs/error.h"
#include "qs/io/gguf_file.h"
#include "qs/io/shape_text.h"

namespace qs::io {

namespace {

constexpr std::byte kMagic[4] = {std::byte{'G'}, std::byte{'G'}, std::byte{'U'}, std::byte{'F'}};
constexpr std::uint64_t kMaxKeyLength = 65535;  // real keys are tens of bytes
constexpr int kMaxArrayDepth = 8;               // arrays of arrays; real files nest at most once
// The fewest bytes one metadata entry (key length, empty key, type, a 1-byte value) and one tensor
// info (name length, dims count, type, offset) take: counts above remaining / these are impossible.
constexpr std::uint64_t kMinEntryBytes = 8 + 4 + 1;
constexpr std::uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;

// Reads little-endian fields from the file image; every read is bounds-checked and a failure names
// the file and what was being read.
class Cursor {
public:
    Cursor(std::span<const std::byte> file, std::string_view name) : file_(file), name_(name) {}

    [[noreturn]] void fail(const std::string& what) const { throw Error(name_ + ": " + what); }

    std::uint64_t offset() const { return pos_; }
    std::uint64_t remaining() const { return file_.size() - pos_; }

    void need(std::uint64_t bytes, const std::string& what) const {
        if (bytes > remaining())
            fail("truncated: " + what + " needs " + std::to_string(bytes) + " bytes at offset " + std::to_string(pos_) +
                 " but the file ends at " + std::to_string(file_.size()));
    }

    template <typename T>
    T read(const std::string& what) {
        need(sizeof(T), what);
        std::uint64_t bits = 0;  // assembled byte by byte: the file is little-endian whatever the host is
        for (std::size_t i = sizeof(T); i-- > 0;) bits = (bits << 8) | static_cast<std::uint8_t>(file_[pos_ + i]);
        pos_ += sizeof(T);
        T value;
        if constexpr (sizeof(T) == 8) {
            std::memcpy(&value, &bits, 8);
        } else {
            const auto narrow =
                static_cast<std::conditional_t<sizeof(T) == 4, std::uint32_t,
                                               std::conditional_t<sizeof(T) == 2, std::uint16_t, std::uint8_t>>>(bits);
            std::memcpy(&value, &narrow, sizeof(T));
        }
        return value;
    }

    std::string readString(const std::string& what, std::uint64_t maxLength) {
        const auto length = read<std::uint64_t>(what + "'s length");
        if (length > maxLength)
            fail(what + " claims " + std::to_string(length) + " bytes, more than the " + std::to_string(maxLength) +
                 " allowed");
        if (length > remaining())
            fail(what + " claims " + std::to_string(length) + " bytes at offset " + std::to_string(pos_) +
                 " but only " + std::to_string(remaining()) + " remain in the file");
        std::string s(reinterpret_cast<const char*>(file_.data() + pos_), static_cast<std::size_t>(length));
        pos_ += length;
        return s;
    }

    // A count read from the file, refused when that many items of at least `minBytes` each cannot fit.
    std::uint64_t readCount(const std::string& what, std::uint64_t minBytes) {
        const auto n = read<std::uint64_t>(what);
        if (n > remaining() / minBytes)
            fail(what + " is " + std::to_string(n) + ", but the " + std::to_string(remaining()) +
                 " bytes left in the file can hold at most " + std::to_string(remaining() / minBytes) +
                 " (truncated or corrupt)");
        return n;
    }

private:
    std::span<const std::byte> file_;
    std::string name_;
    std::uint64_t pos_ = 0;
};

bool knownValueType(std::uint32_t t) { return t <= static_cast<std::uint32_t>(GgufValueType::F64); }

// The fewest bytes one array element of `type` takes.
std::uint64_t minElementBytes(GgufValueType type) {
    if (type == GgufValueType::String) return 8;
    if (type == GgufValueType::Array) return 4 + 8;
    return ggufValueTypeSize(type);
}

GgufValue readValue(Cursor& c, GgufValueType type, int depth, const std::string& where);

GgufValue readArray(Cursor& c, int depth, const std::string& where) {
    if (depth >= kMaxArrayDepth)
        c.fail(where + ": arrays nest deeper than " + std::to_string(kMaxArrayDepth) + " levels");
    const auto elementType = c.read<std::uint32_t>(where + "'s element type");
    if (!knownValueType(elementType)) c.fail(where + ": unknown array element type " + std::to_string(elementType));
    GgufArray array{static_cast<GgufValueType>(elementType), {}};
    const auto n = c.readCount(where + "'s element count", minElementBytes(array.elementType));
    array.items.reserve(static_cast<std::size_t>(n));
    for (std::uint64_t i = 0; i < n; ++i)
        array.items.push_back(readValue(c, array.elementType, depth + 1, where + "[" + std::to_string(i) + "]"));
    return GgufValue::array(std::move(array));
}

GgufValue readValue(Cursor& c, GgufValueType type, int depth, const std::string& where) {
    using T = GgufValueType;
    switch (type) {
        case T::U8: return GgufValue::unsignedInteger(type, c.read<std::uint8_t>(where));
        case T::U16: return GgufValue::unsignedInteger(type, c.read<std::uint16_t>(where));
        case T::U32: return GgufValue::unsignedInteger(type, c.read<std::uint32_t>(where));
        case T::U64: return GgufValue::unsignedInteger(type, c.read<std::uint64_t>(where));
        case T::I8: return GgufValue::signedInteger(type, c.read<std::int8_t>(where));
        case T::I16: return GgufValue::signedInteger(type, c.read<std::int16_t>(where));
        case T::I32: return GgufValue::signedInteger(type, c.read<std::int32_t>(where));
        case T::I64: return GgufValue::signedInteger(type, c.read<std::int64_t>(where));
        case T::F32: return GgufValue::floating(type, c.read<float>(where));
        case T::F64: return GgufValue::floating(type, c.read<double>(where));
        case T::Bool: return GgufValue::boolean(c.read<std::uint8_t>(where) != 0);
        case T::String: return GgufValue::string(c.readString(where, std::numeric_limits<std::uint64_t>::max()));
        case T::Array: return readArray(c, depth, where);
    }
    c.fail(where + ": unknown value type " + std::to_string(static_cast<std::uint32_t>(type)));
}

void readMetadata(Cursor& c, std::uint64_t count, GgufMetadata& metadata) {
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::string key = c.readString("metadata key " + std::to_string(i), kMaxKeyLength);
        const std::string where = key.empty() ? "metadata key " + std::to_string(i) : "metadata key '" + key + "'";
        if (key.empty()) c.fail(where + " is empty");
        const auto type = c.read<std::uint32_t>(where + "'s type");
        if (!knownValueType(type)) c.fail(where + " has unknown value type " + std::to_string(type));
        if (!metadata.add(key, readValue(c, static_cast<GgufValueType>(type), 0, where)))
            c.fail(where + " appears twice");
    }
}

std::uint32_t readAlignment(const GgufMetadata& metadata, const Cursor& c) {
    const GgufValue* v = metadata.find("general.alignment");
    if (v == nullptr) return kGgufDefaultAlignment;
    if (v->type() != GgufValueType::U32)
        c.fail("general.alignment must be a u32, but it is a " + ggufValueTypeName(v->type()));
    const auto a = static_cast<std::uint64_t>(*v->asInteger());
    if (a == 0 || (a & (a - 1)) != 0) c.fail("general.alignment " + std::to_string(a) + " is not a power of two");
    return static_cast<std::uint32_t>(a);
}

// The safetensors dtype holding the same numbers as a plain ggml type; U8 for the block types.
DType twinDType(GgmlType t) {
    switch (t) {
        case GgmlType::F32: return DType::F32;
        case GgmlType::F16: return DType::F16;
        case GgmlType::BF16: return DType::BF16;
        case GgmlType::F64: return DType::F64;
        case GgmlType::I8: return DType::I8;
        case GgmlType::I16: return DType::I16;
        case GgmlType::I32: return DType::I32;
        case GgmlType::I64: return DType::I64;
        default: return DType::U8;
    }
}

// Dimensions innermost first, as stored; each non-negative, and the product of the non-zero ones
// within 63 bits, so that the element count cannot overflow whatever order it is multiplied in
// (an empty tensor's other dimensions may not be absurd either).
std::vector<std::int64_t> readDims(Cursor& c, const std::string& where) {
    const auto nDims = c.read<std::uint32_t>(where + "'s number of dimensions");
    if (nDims > static_cast<std::uint32_t>(kGgufMaxDims))
        c.fail(where + " has " + std::to_string(nDims) + " dimensions; GGUF allows at most " +
               std::to_string(kGgufMaxDims));
    std::vector<std::int64_t> dims;
    std::int64_t nonZeroProduct = 1;
    for (std::uint32_t d = 0; d < nDims; ++d) {
        const auto dim = c.read<std::int64_t>(where + "'s dimension " + std::to_string(d));
        if (dim < 0) c.fail(where + " has a negative dimension " + std::to_string(dim));
        if (dim > 0 && __builtin_mul_overflow(nonZeroProduct, dim, &nonZeroProduct))
            c.fail(where + " has dimensions whose product does not fit in 63 bits");
        dims.push_back(dim);
    }
    return dims;
}

TensorInfo readTensorInfo(Cursor& c, std::uint64_t index) {
    TensorInfo info;
    info.name = c.readString("tensor info " + std::to_string(index) + "'s name", kGgufMaxTensorName);
    if (info.name.empty()) c.fail("tensor info " + std::to_string(index) + " has an empty name");
    const std::string where = "tensor '" + info.name + "'";
    const std::vector<std::int64_t> dims = readDims(c, where);
    const auto typeNumber = c.read<std::uint32_t>(where + "'s type");
    const GgmlTypeTraits* traits = ggmlTypeTraits(typeNumber);
    if (traits == nullptr) c.fail(where + " has unknown ggml type " + std::to_string(typeNumber));
    const std::int64_t rowLength = dims.empty() ? 1 : dims.front();
    if (rowLength % traits->blockElements != 0)
        c.fail(where + " (" + std::string(traits->name) + ", dimensions " + shapeText(dims) + ") has rows of " +
               std::to_string(rowLength) + " elements, not a multiple of the type's block of " +
               std::to_string(traits->blockElements));
    info.ggmlType = traits->type;
    info.dtype = twinDType(traits->type);
    info.shape.assign(dims.rbegin(), dims.rend());
    const std::uint64_t offset = c.read<std::uint64_t>(where + "'s data offset");
    std::uint64_t bytes = 0;
    const std::uint64_t blocks =
        static_cast<std::uint64_t>(info.numel()) / static_cast<std::uint64_t>(traits->blockElements);
    if (__builtin_mul_overflow(blocks, static_cast<std::uint64_t>(traits->blockBytes), &bytes) ||
        __builtin_add_overflow(offset, bytes, &info.end))
        c.fail(where + " (dimensions " + shapeText(dims) + ") needs more bytes than fit in 64 bits");
    info.begin = offset;
    return info;
}

void checkTensorPlacement(std::vector<TensorInfo> tensors, const GgufHeader& h, std::uint64_t fileSize,
                          const Cursor& c) {
    const std::uint64_t dataBytes = fileSize - h.dataOffset;
    for (const auto& t : tensors) {
        if (t.begin % h.alignment != 0)
            c.fail("tensor '" + t.name + "': data offset " + std::to_string(t.begin) +
                   " is not a multiple of the alignment " + std::to_string(h.alignment));
        if (t.end > dataBytes)
            c.fail("tensor '" + t.name + "': data [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                   ") runs past the end of the file: the data section at offset " + std::to_string(h.dataOffset) +
                   " holds " + std::to_string(dataBytes) + " bytes");
    }
    std::sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
        return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
    });
    for (std::size_t i = 1; i < tensors.size(); ++i)
        if (tensors[i].begin < tensors[i - 1].end && tensors[i].byteSize() > 0)
            c.fail("tensor '" + tensors[i].name + "': data [" + std::to_string(tensors[i].begin) + ", " +
                   std::to_string(tensors[i].end) + ") overlaps tensor '" + tensors[i - 1].name + "', which ends at " +
                   std::to_string(tensors[i - 1].end));
}

std::uint32_t readVersion(Cursor& c) {
    const auto version = c.read<std::uint32_t>("the version");
    if ((version & 0xFFFFu) == 0 && version != 0)
        c.fail("GGUF version " + std::to_string(version) +
               " looks byte-swapped: big-endian GGUF files are not supported");
    if (version == 1) c.fail("GGUF version 1 is not supported (versions 2 and 3 are; llama.cpp dropped version 1 too)");
    if (version < 2 || version > 3)
        c.fail("GGUF version " + std::to_string(version) + " is not supported (versions 2 and 3 are)");
    return version;
}

}  // namespace

bool hasGgufMagic(std::span<const std::byte> bytes) {
    return bytes.size() >= 4 && std::equal(std::begin(kMagic), std::end(kMagic), bytes.begin());
}

GgufHeader parseGguf(std::span<const std::byte> file, std::string_view displayName) {
    Cursor c(file, displayName);
    c.need(4, "the magic");
    if (!hasGgufMagic(file)) c.fail("not a GGUF file: it does not begin with the magic 'GGUF'");
    c.read<std::uint32_t>("the magic");
    GgufHeader h;
    h.version = readVersion(c);
    const auto tensorCount = c.readCount("the tensor count", kMinTensorInfoBytes);
    const auto kvCount = c.readCount("the metadata count", kMinEntryBytes);
    readMetadata(c, kvCount, h.metadata);
    h.alignment = readAlignment(h.metadata, c);
    if (tensorCount > c.remaining() / kMinTensorInfoBytes)
        c.fail("the tensor count is " + std::to_string(tensorCount) + ", but the " + std::to_string(c.remaining()) +
               " bytes after the metadata can hold at most " + std::to_string(c.remaining() / kMinTensorInfoBytes) +
               " tensor infos");
    std::set<std::string, std::less<>> names;
    h.tensors.reserve(static_cast<std::size_t>(tensorCount));
    for (std::uint64_t i = 0; i < tensorCount; ++i) {
        h.tensors.push_back(readTensorInfo(c, i));
        if (!names.insert(h.tensors.back().name).second) c.fail("tensor '" + h.tensors.back().name + "' appears twice");
    }
    // The data section begins at the next multiple of the alignment (ggml pads only when there are tensors).
    h.dataOffset = c.offset();
    if (tensorCount > 0) h.dataOffset = (h.dataOffset + h.alignment - 1) / h.alignment * h.alignment;
    if (h.dataOffset > file.size())
        c.fail("truncated: the tensor data section should start at offset " + std::to_string(h.dataOffset) +
               " (after the tensor infos, aligned to " + std::to_string(h.alignment) + ") but the file ends at " +
               std::to_string(file.size()));
    checkTensorPlacement(h.tensors, h, file.size(), c);
    return h;
}

}  // namespace qs::io
