// io::Regex, the engine for patterns that come from files: Python re.match semantics where the
// configs use them, and bounds where a hostile pattern would hang (catastrophic backtracking) or
// crash (50,000 nested groups overflowed std::regex's recursive compiler).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "qs/error.h"
#include "qs/io/regex.h"

using qs::io::Regex;
using testing::HasSubstr;

namespace {

std::string errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const qs::Error& e) {
        return e.what();
    }
    return "(no error)";
}

bool matches(const std::string& pattern, const std::string& subject) {
    return Regex(pattern, Regex::Syntax::Pattern, "test").matchesAtStart(subject);
}

}  // namespace

TEST(Regex, MatchesAtStartLikePythonReMatch) {
    // re.match anchors at the start only: a prefix match is a match, a later one is not.
    EXPECT_TRUE(matches(R"(.*\.q_proj)", "model.layers.0.self_attn.q_proj"));
    EXPECT_TRUE(matches("model", "model.layers.0.mlp.down_proj"));
    EXPECT_FALSE(matches("layers", "model.layers.0.mlp.down_proj"));
    EXPECT_TRUE(matches(R"(model\.layers\.[0-2]\.)", "model.layers.2.mlp"));
    EXPECT_FALSE(matches(R"(model\.layers\.[0-2]\.)", "model.layers.3.mlp"));
    EXPECT_TRUE(matches(R"(.*mlp\.(gate|up)_proj$)", "model.layers.0.mlp.up_proj"));
    EXPECT_FALSE(matches(R"(.*mlp\.(gate|up)_proj$)", "model.layers.0.mlp.down_proj"));
}

TEST(Regex, CatastrophicBacktrackingEndsInAnError) {
    const std::string name = "model.layers.0.self_attn.q_proj.model.layers.0.self_attn.q_proj";
    for (const char* pattern : {"(.|.)*X", "(.*)*X$", "(a|aa)*b", "(x+x+)+y"}) {
        const auto start = std::chrono::steady_clock::now();
        const std::string subject = std::string(pattern) == "(a|aa)*b"   ? std::string(60, 'a')
                                    : std::string(pattern) == "(x+x+)+y" ? std::string(60, 'x')
                                                                         : name;
        const std::string error = errorOf([&] { (void)matches(pattern, subject); });
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        // Either PCRE2 sees at once that no match is possible, or the match limit stops it.
        if (error != "(no error)") {
            EXPECT_THAT(error, HasSubstr("backtracks past QuantScope's limits")) << pattern;
        }
        EXPECT_LT(seconds, 10.0) << pattern;
    }
    // The subject holds the required 'b', which defeats PCRE2's quick rejection: only the limit stops it.
    EXPECT_THAT(errorOf([] { (void)matches("(a|a)*b", std::string(40, 'a') + "cb"); }),
                HasSubstr("backtracks past QuantScope's limits"));
}

TEST(Regex, DeepNestingIsACompileErrorNotACrash) {
    const std::string deep = std::string(50'000, '(') + "a" + std::string(50'000, ')');
    const std::string error =
        errorOf([&] { (void)Regex(deep, Regex::Syntax::Pattern, "quantize_config.json: dynamic"); });
    EXPECT_THAT(error, HasSubstr("quantize_config.json: dynamic: pattern"));
    EXPECT_LE(error.size(), qs::kMaxMessageBytes);
    const std::string nested = std::string(200, '(') + "a" + std::string(200, ')');
    EXPECT_THAT(errorOf([&] { (void)Regex(nested, Regex::Syntax::Pattern, "x"); }),
                HasSubstr("parentheses are too deeply nested"));
    const std::string fine = std::string(32, '(') + "a" + std::string(32, ')');
    EXPECT_TRUE(Regex(fine, Regex::Syntax::Pattern, "x").matchesAtStart("a"));
}

TEST(Regex, HugePatternIsRefusedWithoutEchoingIt) {
    const std::string huge = "re:" + std::string(400'000, 'a');
    const std::string error = errorOf([&] { (void)Regex(huge, Regex::Syntax::Pattern, "config.json: targets"); });
    EXPECT_THAT(error, HasSubstr("is 400003 bytes long, more than the 8192 QuantScope compiles"));
    EXPECT_LT(error.size(), 300u);
}

TEST(Regex, FindAllListsNonOverlappingMatches) {
    const Regex words(R"(\p{L}+)", Regex::Syntax::Pattern, "t");
    const auto spans = words.findAll("héllo, wörld!");
    ASSERT_EQ(spans.size(), 2u);
    EXPECT_EQ(spans[0].begin, 0u);
    EXPECT_EQ(spans[0].end, 6u);  // é is two bytes
    EXPECT_EQ(spans[1].begin, 8u);
    EXPECT_EQ(spans[1].end, 14u);
    const Regex literal("a.b", Regex::Syntax::Literal, "t");
    EXPECT_EQ(literal.findAll("a.b axb a.b").size(), 2u);
}
