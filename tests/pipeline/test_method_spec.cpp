#include <gtest/gtest.h>

#include "qs/error.h"
#include "qs/pipeline/method_spec.h"

using namespace qs::pipeline;

TEST(MethodSpec, ParsesTheCompareList) {
    const auto specs = parseMethodList("rtn4,gptq4,gptq4-act,awq4,fp8,mxfp4,nvfp4,nf4,trellis2,trellis3,rtn2", 64);
    ASSERT_EQ(specs.size(), 11u);
    EXPECT_EQ(specs[0].kind, MethodKind::Rtn);
    EXPECT_EQ(specs[0].bits, 4);
    EXPECT_EQ(specs[0].groupSize, 64);
    EXPECT_EQ(specs[1].kind, MethodKind::Gptq);
    EXPECT_FALSE(specs[1].actOrder);
    EXPECT_TRUE(specs[2].actOrder);
    EXPECT_TRUE(specs[2].needsCalibration());
    EXPECT_EQ(specs[3].kind, MethodKind::Awq);
    EXPECT_EQ(specs[4].kind, MethodKind::Fp8);
    EXPECT_FALSE(specs[4].needsCalibration());
    EXPECT_EQ(specs[8].kind, MethodKind::Trellis);
    EXPECT_EQ(specs[8].bits, 2);
    EXPECT_EQ(specs[8].trellisL, 8);
    EXPECT_EQ(specs[10].bits, 2);
    EXPECT_EQ(specs[2].label(), "GPTQ int4, g64, act-order");
    EXPECT_EQ(specs[0].label(), "RTN int4, g64");
}

TEST(MethodSpec, OptionSuffixes) {
    const auto gptq = parseMethod("gptq4-act-sym");
    EXPECT_TRUE(gptq.actOrder);
    EXPECT_TRUE(gptq.sym);
    EXPECT_FALSE(parseMethod("gptq4").sym);
    EXPECT_EQ(gptq.label(), "GPTQ int4, g128, act-order, sym");
    const auto spec = parseMethod("trellis2-l12");
    EXPECT_EQ(spec.trellisL, 12);
    EXPECT_EQ(spec.bits, 2);
    EXPECT_THROW(parseMethod("trellis3-l3"), qs::Error);
    EXPECT_THROW(parseMethod("trellis2-l17"), qs::Error);
}

TEST(MethodSpec, RejectsUnknownNames) {
    EXPECT_THROW(parseMethod("gptq"), qs::Error);  // bits missing
    EXPECT_THROW(parseMethod("rtn9"), qs::Error);
    EXPECT_THROW(parseMethod("fp16"), qs::Error);
    EXPECT_THROW(parseMethod("gptq4-fast"), qs::Error);
    EXPECT_THROW(parseMethodList(",,"), qs::Error);
    EXPECT_THROW(parseMethod("rtn4", 0), qs::Error);
    try {
        parseMethod("int4");
        FAIL();
    } catch (const qs::Error& e) {
        EXPECT_NE(std::string(e.what()).find("int4"), std::string::npos);
    }
}

TEST(MethodSpec, Fp8ScaleGranularity) {
    EXPECT_EQ(parseMethod("fp8").fp8Scales, Fp8Granularity::Block);
    const auto channel = parseMethod("fp8-channel");
    EXPECT_EQ(channel.kind, MethodKind::Fp8);
    EXPECT_EQ(channel.fp8Scales, Fp8Granularity::Channel);
    EXPECT_EQ(channel.label(), "FP8 E4M3, per-channel scales");
    EXPECT_EQ(parseMethod("fp8-tensor").fp8Scales, Fp8Granularity::Tensor);
    EXPECT_THROW(parseMethod("fp8-row"), qs::Error);
}
