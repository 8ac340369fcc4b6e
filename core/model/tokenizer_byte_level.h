#pragma once
// GPT-2's byte-level alphabet: every byte is shown as a printable character (space -> "Ġ",
// newline -> "Ċ") so that a BPE vocabulary of strings covers arbitrary bytes without an unknown token.
#include <string>
#include <string_view>

namespace qs::model::byte_level {

// Maps every byte of `bytes` to its alphabet character (UTF-8 encoded).
std::string encode(std::string_view bytes);

// The inverse of encode(), appended to `out`. Returns false (and appends nothing) when `text`
// holds a character outside the alphabet, e.g. an added token such as "<|im_end|>" written with
// characters the map lacks; the caller then keeps the text as it is, as Hugging Face does.
bool decode(std::string_view text, std::string& out);

}  // namespace qs::model::byte_level
