// `inspect --stats`: min/max/mean/std and NaN/Inf counts per tensor, checked against values
// known in closed form and against references computed here from the raw bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_process.h"
#include "safetensors_builder.h"

namespace {

using qs::test::RawTensor;
using qs::test::runCli;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr std::size_t kLargeCount = 300001;  // several 65536-element chunks, the last one partial

float largeValue(std::size_t i) { return static_cast<float>(i % 1000) * 0.25f - 50.0f; }

struct Reference {
    double min = 0, max = 0, mean = 0, std = 0;
};

// Plain two-pass statistics in long double: slow and obviously right.
Reference reference(const std::vector<float>& values) {
    long double sum = 0;
    Reference r{values[0], values[0], 0, 0};
    for (float v : values) {
        sum += v;
        r.min = std::min<double>(r.min, v);
        r.max = std::max<double>(r.max, v);
    }
    const long double mean = sum / values.size();
    long double squares = 0;
    for (float v : values) squares += (v - mean) * (v - mean);
    r.mean = static_cast<double>(mean);
    r.std = static_cast<double>(std::sqrt(squares / values.size()));
    return r;
}

class InspectStats : public ::testing::Test {
protected:
    void SetUp() override {
        std::vector<float> large(kLargeCount);
        for (std::size_t i = 0; i < large.size(); ++i) large[i] = largeValue(i);
        const std::vector<RawTensor> tensors{
            {"a.small", "F32", {2, 3}, qs::test::f32Bytes({1.0f, 2.0f, 3.0f, 4.0f, kNaN, kInf})},
            // -2, 0.5, 0.5, 8, -Inf as BF16 bit patterns
            {"b.bf16", "BF16", {5}, qs::test::u16Bytes({0xC000, 0x3F00, 0x3F00, 0x4100, 0xFF80})},
            {"c.large", "F32", {static_cast<std::int64_t>(kLargeCount)}, qs::test::f32Bytes(large)},
            {"d.nan", "F32", {3}, qs::test::f32Bytes({kNaN, kNaN, kNaN})},
        };
        path_ = dir_.path() / "stats.safetensors";
        qs::test::writeFile(path_, qs::test::safetensorsImage(tensors));
    }

    nlohmann::json statsOf(const nlohmann::json& report, const std::string& name) {
        for (const auto& t : report.at("tensors")) {
            if (t.at("name") == name) return t.at("stats");
        }
        ADD_FAILURE() << "no tensor " << name;
        return {};
    }

    qs::test::TempDir dir_;
    std::filesystem::path path_;
};

TEST_F(InspectStats, ExactValuesWithNaNAndInf) {
    const auto result = runCli({"inspect", path_.string(), "--stats", "--json"});
    ASSERT_EQ(result.exitCode, 0) << result.err;
    EXPECT_EQ(result.err, "") << "no progress bar for an operation under a second";
    const auto report = nlohmann::json::parse(result.out);

    const auto a = statsOf(report, "a.small");
    EXPECT_EQ(a.at("count"), 6);
    EXPECT_EQ(a.at("finite"), 4);
    EXPECT_EQ(a.at("nan"), 1);
    EXPECT_EQ(a.at("inf"), 1);
    EXPECT_EQ(a.at("min").get<double>(), 1.0);
    EXPECT_EQ(a.at("max").get<double>(), 4.0);
    EXPECT_EQ(a.at("mean").get<double>(), 2.5);
    EXPECT_EQ(a.at("std").get<double>(), std::sqrt(1.25));  // population std of 1, 2, 3, 4

    const auto b = statsOf(report, "b.bf16");
    EXPECT_EQ(b.at("finite"), 4);
    EXPECT_EQ(b.at("inf"), 1);
    EXPECT_EQ(b.at("nan"), 0);
    EXPECT_EQ(b.at("min").get<double>(), -2.0);
    EXPECT_EQ(b.at("max").get<double>(), 8.0);
    EXPECT_EQ(b.at("mean").get<double>(), 1.75);
    EXPECT_EQ(b.at("std").get<double>(), 3.75);  // deviations -3.75, -1.25, -1.25, 6.25

    const auto d = statsOf(report, "d.nan");
    EXPECT_EQ(d.at("nan"), 3);
    EXPECT_EQ(d.at("finite"), 0);
    EXPECT_TRUE(d.at("mean").is_null()) << "no finite value: no mean";
    EXPECT_TRUE(d.at("min").is_null());
}

TEST_F(InspectStats, LargeTensorAcrossChunksMatchesTwoPassReference) {
    std::vector<float> large(kLargeCount);
    for (std::size_t i = 0; i < large.size(); ++i) large[i] = largeValue(i);
    const Reference ref = reference(large);

    const auto result = runCli({"inspect", path_.string(), "--stats", "--json", "--filter", "^c\\."});
    ASSERT_EQ(result.exitCode, 0) << result.err;
    const auto c = statsOf(nlohmann::json::parse(result.out), "c.large");
    EXPECT_EQ(c.at("count"), kLargeCount);
    EXPECT_EQ(c.at("min").get<double>(), -50.0);
    EXPECT_EQ(c.at("max").get<double>(), 199.75);
    EXPECT_NEAR(c.at("mean").get<double>(), ref.mean, 1e-12 * std::fabs(ref.mean));
    EXPECT_NEAR(c.at("std").get<double>(), ref.std, 1e-12 * ref.std);
}

TEST_F(InspectStats, ResultsDoNotDependOnThreadCount) {
    const auto one = runCli({"inspect", path_.string(), "--stats", "--json", "--threads", "1"});
    const auto two = runCli({"inspect", path_.string(), "--stats", "--json", "--threads", "2"});
    const auto five = runCli({"inspect", path_.string(), "--stats", "--json", "--threads", "5"});
    ASSERT_EQ(one.exitCode, 0) << one.err;
    EXPECT_EQ(one.out, two.out);
    EXPECT_EQ(one.out, five.out);
}

TEST_F(InspectStats, TextTableHasStatisticsColumns) {
    const auto result = runCli({"inspect", path_.string(), "--stats"});
    ASSERT_EQ(result.exitCode, 0) << result.err;
    const auto hasRow = [&](const std::string& pattern) {
        return std::regex_search(result.out, std::regex("(^|\n)" + pattern + "\n"));
    };
    EXPECT_TRUE(hasRow("name +dtype +shape +bytes +min +max +mean +std +nan +inf")) << result.out;
    EXPECT_TRUE(hasRow(R"(a\.small +F32 +\[2, 3\] +24 +1 +4 +2\.5 +1\.11803 +1 +1)")) << result.out;
    EXPECT_TRUE(hasRow(R"(b\.bf16 +BF16 +\[5\] +10 +-2 +8 +1\.75 +3\.75 +0 +1)")) << result.out;
    EXPECT_TRUE(hasRow(R"(d\.nan +F32 +\[3\] +12 +nan +nan +nan +nan +3 +0)")) << result.out;
}

TEST(InspectStatsModel, EveryTensorOfStories260KMatchesReference) {
    const std::string path = std::string(QS_RESOURCES_DIR) + "/models/stories260K/model.safetensors";
    std::ifstream in(path, std::ios::binary);
    const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::uint64_t length = 0;
    std::memcpy(&length, file.data(), 8);
    const auto header = nlohmann::json::parse(file.substr(8, length));

    const auto result = runCli({"inspect", path, "--stats", "--json"});
    ASSERT_EQ(result.exitCode, 0) << result.err;
    const auto tensors = nlohmann::json::parse(result.out).at("tensors");
    ASSERT_EQ(tensors.size(), 47u);
    for (const auto& t : tensors) {
        const auto offsets = header.at(t.at("name").get<std::string>()).at("data_offsets");
        const std::size_t begin = 8 + length + offsets[0].get<std::size_t>();
        std::vector<float> values((offsets[1].get<std::size_t>() - offsets[0].get<std::size_t>()) / 4);
        std::memcpy(values.data(), file.data() + begin, values.size() * 4);
        const Reference ref = reference(values);
        const auto& s = t.at("stats");
        EXPECT_EQ(s.at("min").get<double>(), ref.min) << t.at("name");
        EXPECT_EQ(s.at("max").get<double>(), ref.max) << t.at("name");
        EXPECT_NEAR(s.at("mean").get<double>(), ref.mean, 1e-12 + 1e-12 * std::fabs(ref.mean)) << t.at("name");
        EXPECT_NEAR(s.at("std").get<double>(), ref.std, 1e-12 * ref.std) << t.at("name");
        EXPECT_EQ(s.at("nan"), 0);
        EXPECT_EQ(s.at("inf"), 0);
    }
}

}  // namespace
