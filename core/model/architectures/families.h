#pragma once
// Private to qs_architectures: one function per family file, each returning its Family (registry.cpp
// lists them in order).
#include "qs/architectures/family.h"

namespace qs::architectures::detail {

// The tower layout of Gemma 3's and Mistral 3's vision-language checkpoints (a vision_tower and a
// multi_modal_projector beside the text model): ^language_model.model -> model.language_model,
// ^vision_tower -> model.vision_tower, ^multi_modal_projector -> model.multi_modal_projector,
// ^language_model.lm_head -> lm_head (transformers' _checkpoint_conversion_mapping).
inline VisionLanguage visionTowerAndProjector(std::string_view textModelType) {
    return VisionLanguage{
        .textModelType = textModelType,
        .textConfigTypes = {std::string(textModelType)},
        .current = {"model.language_model.", "lm_head.weight", {"model.vision_tower.", "model.multi_modal_projector."}},
        .old = {"language_model.model.", "language_model.lm_head.weight", {"vision_tower.", "multi_modal_projector."}}};
}

const Family& llama();
const Family& mistral();
const Family& qwen2();
const Family& qwen3();
const Family& qwen3Moe();
const Family& glm4Moe();
const Family& mixtral();
const Family& gptOss();
const Family& gemma3Text();
const Family& phi3();
const Family& gemma3Vlm();
const Family& qwen25Vl();
const Family& qwen3Vl();
const Family& mistral3();
const Family& deepseekV3();
const Family& kimiK2();
const Family& qwen3VlMoe();
const Family& llama4Text();
const Family& llama4();
const Family& qwen35();
const Family& qwen35Moe();
const Family& qwen35Vl();
const Family& qwen35MoeVl();

}  // namespace qs::architectures::detail
