#include "tensor_access.h"

#include <algorithm>
#include <cstring>

#include "qs/error.h"

namespace qs::formats::detail {

std::string tensorWhere(const io::Checkpoint& checkpoint, std::string_view name) {
    const auto* t = checkpoint.find(name);
    const auto file = t ? checkpoint.fileOf(*t) : checkpoint.root();
    return file.string() + ": tensor '" + std::string(name) + "'";
}

void failTensor(const io::Checkpoint& checkpoint, std::string_view name, const std::string& what) {
    throw Error(tensorWhere(checkpoint, name) + ": " + what);
}

bool hasTensor(const io::Checkpoint& checkpoint, std::string_view name) { return checkpoint.find(name) != nullptr; }

io::TensorView requireTensor(const io::Checkpoint& checkpoint, std::string_view name, std::string_view neededBy) {
    if (!hasTensor(checkpoint, name))
        throw Error(checkpoint.root().string() + ": tensor '" + std::string(name) + "' is missing (" +
                    std::string(neededBy) + " needs it)");
    return checkpoint.tensor(name);
}

void requireDtype(const io::Checkpoint& checkpoint, const io::TensorView& t, std::initializer_list<io::DType> allowed) {
    if (std::find(allowed.begin(), allowed.end(), t.dtype()) != allowed.end()) return;
    std::string names;
    for (const auto d : allowed) names += (names.empty() ? "" : " or ") + std::string(io::dtypeName(d));
    failTensor(checkpoint, t.name(), "dtype " + t.info().typeName() + ", expected " + names);
}

void requireRank(const io::Checkpoint& checkpoint, const io::TensorView& t, std::size_t rank) {
    if (t.shape().size() != rank)
        failTensor(checkpoint, t.name(),
                   "shape " + shapeText(t.shape()) + " has rank " + std::to_string(t.shape().size()) +
                       ", expected rank " + std::to_string(rank));
}

void requireShape(const io::Checkpoint& checkpoint, const io::TensorView& t, const std::vector<std::int64_t>& expected,
                  std::string_view because) {
    if (t.shape() != expected)
        failTensor(
            checkpoint, t.name(),
            "shape " + shapeText(t.shape()) + ", expected " + shapeText(expected) + " (" + std::string(because) + ")");
}

bool isScalar(const io::TensorView& t) {
    return t.numel() == 1 && std::all_of(t.shape().begin(), t.shape().end(), [](std::int64_t d) { return d == 1; });
}

std::vector<std::uint32_t> readWords(const io::TensorView& t) {
    std::vector<std::uint32_t> words(static_cast<std::size_t>(t.numel()));
    // memcpy, not a cast: the mmapped data need not be 4-byte aligned.
    std::memcpy(words.data(), t.bytes().data(), std::min(t.bytes().size(), words.size() * 4));
    return words;
}

const std::uint8_t* bytePointer(const io::TensorView& t) {
    return reinterpret_cast<const std::uint8_t*>(t.bytes().data());
}

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace qs::formats::detail
