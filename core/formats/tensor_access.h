#pragma once
// Checked access to the tensors of one linear: every failure is a qs::Error that names the shard file
// and the tensor, and says what was expected.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "qs/io/checkpoint.h"
#include "qs/io/shape_text.h"

namespace qs::formats::detail {

using io::shapeText;  // "[4096, 512]"
// "<shard file>: tensor 'name'" (or the checkpoint folder when the tensor is absent).
std::string tensorWhere(const io::Checkpoint& checkpoint, std::string_view name);
[[noreturn]] void failTensor(const io::Checkpoint& checkpoint, std::string_view name, const std::string& what);

bool hasTensor(const io::Checkpoint& checkpoint, std::string_view name);
io::TensorView requireTensor(const io::Checkpoint& checkpoint, std::string_view name, std::string_view neededBy);
void requireDtype(const io::Checkpoint& checkpoint, const io::TensorView& t, std::initializer_list<io::DType> allowed);
void requireRank(const io::Checkpoint& checkpoint, const io::TensorView& t, std::size_t rank);
void requireShape(const io::Checkpoint& checkpoint, const io::TensorView& t, const std::vector<std::int64_t>& expected,
                  std::string_view because);
// A single value stored as [] or [1] (or [1, 1]).
bool isScalar(const io::TensorView& t);

std::vector<std::uint32_t> readWords(const io::TensorView& t);  // I32/U32 bit patterns
const std::uint8_t* bytePointer(const io::TensorView& t);       // U8/I8/F8 element bytes

std::int64_t ceilDiv(std::int64_t a, std::int64_t b);

}  // namespace qs::formats::detail
