#pragma once
// A tensor shape as error messages print it: "[4096, 512]".
#include <cstdint>
#include <string>
#include <vector>

namespace qs::io {

std::string shapeText(const std::vector<std::int64_t>& shape);

}  // namespace qs::io
