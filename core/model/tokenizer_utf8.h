#pragma once
// UTF-8 helpers shared by the tokenizer stages. Text inside the tokenizer is always valid UTF-8
// (encode() checks it once at the door), so these helpers do not re-validate.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace qs::model::utf8 {

// Byte offset of the first invalid sequence, or nullopt when the whole text is valid UTF-8.
std::optional<std::size_t> firstInvalidByte(std::string_view text);

// Length in bytes of the character that starts with `lead` (1 for a stray continuation byte).
std::size_t charLength(unsigned char lead);

void append(std::string& out, char32_t codePoint);

// Decodes the character at `pos` and moves `pos` past it.
char32_t next(std::string_view text, std::size_t& pos);

}  // namespace qs::model::utf8
