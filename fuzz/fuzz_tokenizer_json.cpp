// libFuzzer target for tokenizer.json: Tokenizer::fromJson on section 0 (tokenizer_config.json in
// section 1, optional), then encode section 2 as text and decode the ids back. Patterns in the file
// run through io::Regex, so a pattern that backtracks forever must end in a qs::Error too.
#include <cstdint>
#include <string>

#include "qs/model/tokenizer.h"

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto s = qs::fuzz::sections(data, size);
    try {
        const auto tokenizer =
            qs::model::Tokenizer::fromJson(s[0], s.size() > 1 ? s[1] : std::string_view(), "fuzz/tokenizer.json");
        const std::string_view text = s.size() > 2 ? s[2] : std::string_view("Hello, world! 123 héllo\n\tend");
        const auto ids = tokenizer.encode(text);
        for (const auto id : ids) qs::fuzz::check(id >= 0);
        (void)tokenizer.decode(ids);
        (void)tokenizer.decode(ids, {.skipSpecial = true});
    } catch (const qs::Error& e) {
        qs::fuzz::checkRefusal(e);
    }
    return 0;
}
