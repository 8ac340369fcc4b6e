// sanitizeMessage, through which every message reaches a user: one line, valid UTF-8, a sane length,
// and nothing a file can use to forge a second line or move the terminal's cursor.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "qs/error.h"
#include "qs/message_text.h"

using qs::sanitizeMessage;
using testing::HasSubstr;

TEST(MessageText, ControlCharactersAreEscaped) {
    EXPECT_EQ(sanitizeMessage("tensor 'a\nquantscope-cli: error: forged'"),
              "tensor 'a\\nquantscope-cli: error: forged'");
    EXPECT_EQ(sanitizeMessage("a\rb\tc\x1b[2Jd\x7f"), "a\\rb\\tc\\x1b[2Jd\\x7f");
    EXPECT_EQ(sanitizeMessage(std::string("nul\0here", 8)), "nul\\x00here");
    // C1 controls and the Unicode line separators break lines in some terminals and viewers.
    EXPECT_EQ(sanitizeMessage("a\xC2\x85"
                              "b\xE2\x80\xA8"
                              "c"),
              "a\\u0085b\\u2028c");
}

TEST(MessageText, InvalidUtf8IsEscapedAndValidUtf8Kept) {
    EXPECT_EQ(sanitizeMessage("d\xFFtype"), "d\\xfftype");
    EXPECT_EQ(sanitizeMessage("\xC3"), "\\xc3");                    // truncated sequence
    EXPECT_EQ(sanitizeMessage("\xC0\xAF"), "\\xc0\\xaf");           // overlong '/'
    EXPECT_EQ(sanitizeMessage("\xED\xA0\x80"), "\\xed\\xa0\\x80");  // a surrogate
    EXPECT_EQ(sanitizeMessage("w\xC3\xB6rld \xF0\x9F\x98\x80"), "w\xC3\xB6rld \xF0\x9F\x98\x80");
}

TEST(MessageText, LongTextKeepsHeadAndTailWithinTheLimit) {
    const std::string text = "/models/x/config.json: pattern '" + std::string(400'000, 'a') + "' does not compile";
    const std::string out = sanitizeMessage(text);
    EXPECT_LE(out.size(), qs::kMaxMessageBytes);
    EXPECT_EQ(out.rfind("/models/x/config.json: pattern 'aaa", 0), 0u);
    EXPECT_THAT(out, HasSubstr("\xE2\x80\xA6"));
    EXPECT_TRUE(out.ends_with("aaa' does not compile"));
    // Multi-byte characters are never cut in half.
    const std::string wide =
        sanitizeMessage(std::string(3000, 'x') + std::string(1000, '\0') + "\xC3\xB6\xC3\xB6\xC3\xB6");
    EXPECT_LE(wide.size(), qs::kMaxMessageBytes);
    EXPECT_EQ(sanitizeMessage(wide), wide);
}

TEST(MessageText, IsIdempotentSoNestedMessagesAreNotEscapedTwice) {
    const std::string once = sanitizeMessage("a\nb\\nc\xFF" + std::string(2000, 'z'));
    EXPECT_EQ(sanitizeMessage(once), once);
    const qs::Error inner("tensor 'x\ny'");
    const qs::Error outer(std::string("model.safetensors: ") + inner.what());
    EXPECT_STREQ(outer.what(), "model.safetensors: tensor 'x\\ny'");
}
