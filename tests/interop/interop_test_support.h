#pragma once
// What the llama.cpp interop tests share: the models and the story they are judged on, and the fixture
// that fails (saying how to install it) when llama.cpp is missing and gives each test its own scratch
// folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <unistd.h>

#include "llama_libraries.h"

namespace qs::interop {

// The two models llama.cpp judges: the demo (Qwen3, BPE) and stories260K (llama, a llama2.c tokenizer).
inline const std::filesystem::path kDemo = std::filesystem::path(QS_RESOURCES_DIR) / "demo";
inline const std::filesystem::path kStories = std::filesystem::path(QS_RESOURCES_DIR) / "models" / "stories260K";
inline const std::filesystem::path kStoriesTokenizer =
    std::filesystem::path(QS_TEST_DATA_DIR) / "stories260K" / "tok512.bin";

// A TinyStories-like text stories260K's tokenizer covers; the first five sentences (kStoryOpening)
// are the GGUF methods' evaluation text, the whole the GGUF export's.
inline const std::string kStoryOpening =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. "
    "One day, Lily saw a big red ball under a tree. She ran to the tree and picked up the ball. \"Can I play with "
    "you?\" "
    "asked a small dog. Lily smiled and said, \"Yes, let's play together!\" They played all day and had lots of fun. "
    "When the sun went down, Lily went home and told her mom about her new friend. The next morning, Lily woke up "
    "early. "
    "She put on her shoes and ran back to the park. The dog was waiting for her by the tree.";
inline const std::string kStory =
    kStoryOpening +
    " They played with the ball "
    "again, and then they found a little bird that could not fly. Lily was sad for the bird. She took it home in a box "
    "and gave it some water. Her mom helped her keep it warm. After a few days, the bird was happy and strong, and it "
    "flew "
    "away into the blue sky. Lily waved goodbye and smiled, because she knew that helping others is a good thing to "
    "do.";

class JudgedTest : public ::testing::Test {
protected:
    void SetUp() override {
        const std::string why = missingJudge();
        if (!why.empty()) FAIL() << why;
        const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = std::filesystem::temp_directory_path() /
               ("qs_" + std::string(test->test_suite_name()) + "_" + std::to_string(::getpid()) + "_" + test->name());
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    std::filesystem::path dir_;
};

}  // namespace qs::interop
