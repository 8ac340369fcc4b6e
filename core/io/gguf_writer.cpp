// GgufWriter: tensor data streams into a part file (each tensor padded to the alignment) as it is
// added; finish() writes the header (magic, version 3, counts, metadata, tensor infos, padding) into
// the final file, appends the data and renames the file into place.
#include "qs/io/gguf_writer.h"

#include <cstring>
#include <set>

#include "qs/error.h"
#include "qs/io/gguf_file.h"
#include "qs/io/shape_text.h"

#include "output_file.h"
#include "writer_guard.h"

namespace qs::io {

namespace fs = std::filesystem;

namespace {

constexpr std::uint32_t kVersion = 3;

// Little-endian serialisation into a byte buffer.
class Bytes {
public:
    template <typename T>
    void put(T value) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, &value, sizeof(T));
        for (std::size_t i = 0; i < sizeof(T); ++i) out_.push_back(static_cast<std::byte>((bits >> (8 * i)) & 0xFF));
    }
    void putString(const std::string& s) {
        put<std::uint64_t>(s.size());
        for (const char ch : s) out_.push_back(static_cast<std::byte>(ch));
    }
    void pad(std::uint64_t alignment) {
        out_.resize((out_.size() + alignment - 1) / alignment * alignment, std::byte{0});
    }
    const std::vector<std::byte>& data() const { return out_; }

private:
    std::vector<std::byte> out_;
};

void putValue(Bytes& b, const GgufValue& v);

void putArray(Bytes& b, const GgufArray& a) {
    b.put<std::uint32_t>(static_cast<std::uint32_t>(a.elementType));
    b.put<std::uint64_t>(a.items.size());
    for (const auto& item : a.items) putValue(b, item);
}

void putValue(Bytes& b, const GgufValue& v) {
    using T = GgufValueType;
    switch (v.type()) {
        case T::U8: b.put(static_cast<std::uint8_t>(*v.asInteger())); return;
        case T::I8: b.put(static_cast<std::int8_t>(*v.asInteger())); return;
        case T::U16: b.put(static_cast<std::uint16_t>(*v.asInteger())); return;
        case T::I16: b.put(static_cast<std::int16_t>(*v.asInteger())); return;
        case T::U32: b.put(static_cast<std::uint32_t>(*v.asInteger())); return;
        case T::I32: b.put(static_cast<std::int32_t>(*v.asInteger())); return;
        case T::I64: b.put(static_cast<std::int64_t>(*v.asInteger())); return;
        case T::U64: b.put(*v.asUnsigned()); return;
        case T::F32: b.put(static_cast<float>(*v.asNumber())); return;
        case T::F64: b.put(*v.asNumber()); return;
        case T::Bool: b.put(static_cast<std::uint8_t>(*v.asBool() ? 1 : 0)); return;
        case T::String: b.putString(*v.asString()); return;
        case T::Array: putArray(b, *v.asArray()); return;
    }
}

// Every element of an array must be of its declared type, or the file would not parse back.
void checkValue(const GgufValue& v, const std::string& key, const fs::path& destination) {
    const GgufArray* a = v.asArray();
    if (a == nullptr) return;
    for (const auto& item : a->items) {
        if (item.type() != a->elementType)
            throw Error(destination.string() + ": metadata '" + key + "' is an array of " +
                        ggufValueTypeName(a->elementType) + " holding a " + ggufValueTypeName(item.type()));
        checkValue(item, key, destination);
    }
}

struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<std::int64_t> shape;  // row-major
    std::uint64_t offset;
};

}  // namespace

struct GgufWriter::Impl {
    fs::path destination;
    GgufWriterOptions options;
    fs::path tempDir;
    GgufMetadata metadata;
    std::vector<PendingTensor> tensors;
    std::set<std::string> names;
    bool measuring = false;  // count, write nothing
    std::unique_ptr<detail::OutputFile> data;
    std::uint64_t dataSize = 0;  // the tensor data with its padding
    detail::WriterGuard guard{"GGUF writer"};

    ~Impl() { discard(); }

    [[noreturn]] void fail(const std::string& what) const {
        throw Error((measuring ? std::string("measured GGUF") : destination.string()) + ": " + what);
    }

    void discard() noexcept {
        data.reset();
        std::error_code ec;
        if (!tempDir.empty()) fs::remove_all(tempDir, ec);
    }

    template <typename Body>
    auto guarded(Body&& body) {
        return guard.run(
            std::forward<Body>(body), [this](const std::string& what) { fail(what); }, [this] { discard(); });
    }

    std::uint64_t checkTensor(const std::string& name, GgmlType type, const std::vector<std::int64_t>& shape) const;
    std::vector<std::byte> header() const;
};

std::uint64_t GgufWriter::Impl::checkTensor(const std::string& name, GgmlType type,
                                            const std::vector<std::int64_t>& shape) const {
    if (name.empty() || name.size() > kGgufMaxTensorName)
        fail("tensor name '" + name + "' must be 1 to " + std::to_string(kGgufMaxTensorName) + " bytes long");
    if (names.contains(name)) fail("tensor '" + name + "' added twice");
    if (shape.size() > static_cast<std::size_t>(kGgufMaxDims))
        fail("tensor '" + name + "': shape " + shapeText(shape) + " has more than " + std::to_string(kGgufMaxDims) +
             " dimensions");
    std::int64_t elements = 1;
    for (const auto d : shape)
        if (d < 0 || __builtin_mul_overflow(elements, d, &elements))
            fail("tensor '" + name + "': shape " + shapeText(shape) + " is invalid");
    const std::int64_t row = shape.empty() ? 1 : shape.back();
    const auto& traits = ggmlTypeTraits(type);
    if (row % traits.blockElements != 0)
        fail("tensor '" + name + "': " + std::string(traits.name) + " stores rows in blocks of " +
             std::to_string(traits.blockElements) + " but shape " + shapeText(shape) + " has rows of " +
             std::to_string(row));
    return row == 0 ? 0 : static_cast<std::uint64_t>(elements / row) * ggmlRowBytes(type, row);
}

std::vector<std::byte> GgufWriter::Impl::header() const {
    GgufMetadata all = metadata;
    if (options.alignment != kGgufDefaultAlignment) all.set("general.alignment", GgufValue::u32(options.alignment));
    Bytes b;
    for (const char ch : {'G', 'G', 'U', 'F'}) b.put(static_cast<std::uint8_t>(ch));
    b.put<std::uint32_t>(kVersion);
    b.put<std::uint64_t>(tensors.size());
    b.put<std::uint64_t>(all.size());
    for (const auto& [key, value] : all.entries()) {
        b.putString(key);
        b.put<std::uint32_t>(static_cast<std::uint32_t>(value.type()));
        putValue(b, value);
    }
    for (const auto& t : tensors) {
        b.putString(t.name);
        b.put<std::uint32_t>(static_cast<std::uint32_t>(t.shape.size()));
        for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) b.put<std::int64_t>(*d);  // innermost first
        b.put<std::uint32_t>(static_cast<std::uint32_t>(t.type));
        b.put<std::uint64_t>(t.offset);
    }
    if (!tensors.empty()) b.pad(options.alignment);
    return b.data();
}

GgufWriter::GgufWriter(fs::path destination, GgufWriterOptions options) : impl_(std::make_unique<Impl>()) {
    auto& w = *impl_;
    w.destination = fs::absolute(destination);
    w.options = options;
    const auto a = options.alignment;
    if (a == 0 || (a & (a - 1)) != 0) w.fail("alignment " + std::to_string(a) + " is not a power of two");
    if (fs::is_directory(w.destination)) w.fail("is a folder; a GGUF destination is a file");
    if (fs::exists(w.destination) && !options.overwrite)
        w.fail("already exists (choose another destination or allow overwriting)");
    if (!fs::is_directory(w.destination.parent_path()))
        w.fail("its folder " + w.destination.parent_path().string() + " does not exist");
    w.tempDir = detail::makeSiblingDir(w.destination, ".tmp-");
    w.data = std::make_unique<detail::OutputFile>(w.tempDir / "data.part");
}

GgufWriter::GgufWriter() : impl_(std::make_unique<Impl>()) {}

GgufWriter GgufWriter::measuring(GgufWriterOptions options) {
    GgufWriter writer;
    writer.impl_->measuring = true;
    writer.impl_->options = options;
    const auto a = options.alignment;
    if (a == 0 || (a & (a - 1)) != 0) writer.impl_->fail("alignment " + std::to_string(a) + " is not a power of two");
    return writer;
}

GgufWriter::~GgufWriter() = default;
GgufWriter::GgufWriter(GgufWriter&&) noexcept = default;

std::uint64_t GgufWriter::bytes() const { return impl_->header().size() + impl_->dataSize; }

void GgufWriter::set(std::string key, GgufValue value) {
    impl_->guarded([&] {
        if (key.empty()) impl_->fail("a metadata key cannot be empty");
        if (key == "general.alignment") impl_->fail("general.alignment is set through GgufWriterOptions");
        checkValue(value, key, impl_->destination);
        impl_->metadata.set(std::move(key), std::move(value));
    });
}

const GgufMetadata& GgufWriter::metadata() const { return impl_->metadata; }

void GgufWriter::addTensor(const std::string& name, GgmlType type, const std::vector<std::int64_t>& shape,
                           std::span<const std::byte> bytes) {
    impl_->guarded([&] {
        auto& w = *impl_;
        const std::uint64_t need = w.checkTensor(name, type, shape);
        if (bytes.size() != need && !w.measuring)
            w.fail("tensor '" + name + "': " + std::to_string(bytes.size()) + " bytes given but " +
                   std::string(ggmlTypeTraits(type).name) + " " + shapeText(shape) + " needs " + std::to_string(need));
        w.tensors.push_back(PendingTensor{name, type, shape, w.dataSize});
        w.names.insert(name);
        const std::uint64_t padding = (w.options.alignment - need % w.options.alignment) % w.options.alignment;
        w.dataSize += need + padding;
        if (w.measuring) return;
        w.data->write(bytes);
        const std::vector<std::byte> zeros(padding);
        w.data->write(zeros);
    });
}

fs::path GgufWriter::finish() {
    return impl_->guarded([&] {
        auto& w = *impl_;
        if (w.measuring) {
            w.guard.markFinished();
            return fs::path();
        }
        w.data->close();
        const fs::path part = w.tempDir / "file.part";
        {
            detail::OutputFile out(part);
            out.write(w.header());
            out.append(w.data->path());
            out.close();
        }
        fs::permissions(
            part, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
        fs::rename(part, w.destination);  // atomic, replacing an existing file when overwrite was allowed
        w.guard.markFinished();
        w.discard();
        return w.destination;
    });
}

}  // namespace qs::io
