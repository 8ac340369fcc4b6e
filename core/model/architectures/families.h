#pragma once
// Private to qs_architectures: one function per family file, each returning its Family (registry.cpp
// lists them in order).
#include "qs/architectures/family.h"

namespace qs::architectures::detail {

const Family& llama();
const Family& mistral();
const Family& qwen2();
const Family& qwen3();
const Family& qwen3Moe();
const Family& mixtral();
const Family& gptOss();
const Family& gemma3Text();
const Family& phi3();
const Family& gemma3Vlm();
const Family& qwen25Vl();
const Family& qwen3Vl();
const Family& mistral3();
const Family& deepseekV3();
const Family& qwen3VlMoe();

}  // namespace qs::architectures::detail
