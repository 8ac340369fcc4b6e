// parseTensorName on the naming schemes of the architectures and quantized formats QuantScope reads.
#include <gtest/gtest.h>

#include "qs/io/tensor_name.h"

using namespace qs::io;

namespace {

void expectName(const char* full, int layer, const char* module, const char* part, TensorRole role) {
    const TensorName n = parseTensorName(full);
    EXPECT_EQ(n.layer, layer) << full;
    EXPECT_EQ(n.module, module) << full;
    EXPECT_EQ(n.part, part) << full;
    EXPECT_EQ(n.role, role) << full;
}

}  // namespace

TEST(TensorName, LlamaMistralQwen) {
    expectName("model.layers.7.mlp.down_proj.weight", 7, "mlp.down_proj", "weight", TensorRole::Linear);
    expectName("model.layers.12.self_attn.o_proj.bias", 12, "self_attn.o_proj", "bias", TensorRole::Linear);
    expectName("model.layers.0.input_layernorm.weight", 0, "input_layernorm", "weight", TensorRole::Norm);
    expectName("model.layers.3.post_attention_layernorm.weight", 3, "post_attention_layernorm", "weight",
               TensorRole::Norm);
    expectName("model.layers.5.self_attn.q_norm.weight", 5, "self_attn.q_norm", "weight", TensorRole::Norm);  // Qwen3
    expectName("model.embed_tokens.weight", -1, "embed_tokens", "weight", TensorRole::Embedding);
    expectName("model.norm.weight", -1, "norm", "weight", TensorRole::Norm);
    expectName("lm_head.weight", -1, "lm_head", "weight", TensorRole::LmHead);
}

// DeepSeek-V3's latent attention: kv_a_proj_with_mqa is a linear though its name does not end in "_proj".
TEST(TensorName, DeepseekLatentAttention) {
    expectName("model.layers.4.self_attn.kv_a_proj_with_mqa.weight", 4, "self_attn.kv_a_proj_with_mqa", "weight",
               TensorRole::Linear);
    expectName("model.layers.4.self_attn.q_b_proj.weight", 4, "self_attn.q_b_proj", "weight", TensorRole::Linear);
    expectName("model.layers.4.self_attn.kv_a_layernorm.weight", 4, "self_attn.kv_a_layernorm", "weight",
               TensorRole::Norm);
}

TEST(TensorName, GemmaAndMultimodalPrefixes) {
    expectName("model.layers.2.pre_feedforward_layernorm.weight", 2, "pre_feedforward_layernorm", "weight",
               TensorRole::Norm);
    expectName("model.language_model.layers.4.mlp.gate_proj.weight", 4, "mlp.gate_proj", "weight", TensorRole::Linear);
    expectName("model.language_model.embed_tokens.weight", -1, "embed_tokens", "weight", TensorRole::Embedding);
}

TEST(TensorName, Gpt2) {
    expectName("transformer.h.3.attn.c_attn.weight", 3, "attn.c_attn", "weight", TensorRole::Linear);
    expectName("transformer.h.0.mlp.c_fc.bias", 0, "mlp.c_fc", "bias", TensorRole::Linear);
    expectName("transformer.h.1.ln_2.weight", 1, "ln_2", "weight", TensorRole::Norm);
    expectName("transformer.wte.weight", -1, "wte", "weight", TensorRole::Embedding);
    expectName("transformer.wpe.weight", -1, "wpe", "weight", TensorRole::Embedding);
    expectName("transformer.ln_f.bias", -1, "ln_f", "bias", TensorRole::Norm);
    expectName("transformer.h.0.attn.bias", 0, "attn", "bias", TensorRole::Other);  // old causal-mask buffer
}

TEST(TensorName, QuantizedParts) {
    expectName("model.layers.0.self_attn.q_proj.qweight", 0, "self_attn.q_proj", "qweight", TensorRole::Linear);
    expectName("model.layers.0.self_attn.q_proj.qzeros", 0, "self_attn.q_proj", "qzeros", TensorRole::Linear);
    expectName("model.layers.0.self_attn.q_proj.scales", 0, "self_attn.q_proj", "scales", TensorRole::Linear);
    expectName("model.layers.0.self_attn.q_proj.g_idx", 0, "self_attn.q_proj", "g_idx", TensorRole::Linear);
    expectName("model.layers.9.mlp.up_proj.weight_scale_inv", 9, "mlp.up_proj", "weight_scale_inv", TensorRole::Linear);
    expectName("model.layers.9.mlp.up_proj.weight_scale", 9, "mlp.up_proj", "weight_scale", TensorRole::Linear);
    expectName("model.layers.9.mlp.up_proj.weight_packed", 9, "mlp.up_proj", "weight_packed", TensorRole::Linear);
    expectName("model.layers.9.mlp.up_proj.weight_global_scale", 9, "mlp.up_proj", "weight_global_scale",
               TensorRole::Linear);
    expectName("model.layers.9.mlp.up_proj.input_scale", 9, "mlp.up_proj", "input_scale", TensorRole::Linear);
    expectName("model.layers.1.mlp.down_proj.weight.absmax", 1, "mlp.down_proj", "weight.absmax", TensorRole::Linear);
    expectName("model.layers.1.mlp.down_proj.weight.quant_map", 1, "mlp.down_proj", "weight.quant_map",
               TensorRole::Linear);
    expectName("model.layers.1.mlp.down_proj.weight.quant_state.bitsandbytes__nf4", 1, "mlp.down_proj",
               "weight.quant_state.bitsandbytes__nf4", TensorRole::Linear);
    expectName("model.layers.2.mlp.experts.gate_up_proj_blocks", 2, "mlp.experts.gate_up_proj", "blocks",
               TensorRole::Linear);
    expectName("model.layers.2.mlp.experts.down_proj_scales", 2, "mlp.experts.down_proj", "scales", TensorRole::Linear);
}

TEST(TensorName, MoeRouterExpertsAndAdapters) {
    expectName("model.layers.4.mlp.experts.17.down_proj.weight", 4, "mlp.experts.17.down_proj", "weight",
               TensorRole::Linear);
    expectName("model.layers.4.mlp.gate.weight", 4, "mlp.gate", "weight", TensorRole::Linear);
    expectName("model.layers.4.mlp.router.weight", 4, "mlp.router", "weight", TensorRole::Linear);
    expectName("model.layers.4.mlp.router.bias", 4, "mlp.router", "bias", TensorRole::Linear);
    expectName("model.layers.36.self_attn.q_proj.lora_a", 36, "self_attn.q_proj", "lora_a", TensorRole::Linear);
    expectName("base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight", 1, "self_attn.v_proj", "lora_B.weight",
               TensorRole::Linear);
}

TEST(TensorName, UnknownNamesStillSplit) {
    expectName("rotary_emb.inv_freq", -1, "rotary_emb", "inv_freq", TensorRole::Other);
    expectName("weight", -1, "", "weight", TensorRole::Other);
    expectName("model.layers.x.weight", -1, "layers.x", "weight", TensorRole::Other);
}

TEST(TensorName, LayerIndicesOutOfRangeNameNoLayer) {
    // A layer index is plain digits below kMaxLayerIndex; anything else is an ordinary name part, so
    // that a hostile name cannot make the layer count 2^31 (or overflow maxLayer + 1).
    expectName("model.layers.999999.mlp.down_proj.weight", 999999, "mlp.down_proj", "weight", TensorRole::Linear);
    expectName("model.layers.1000000.mlp.down_proj.weight", -1, "layers.1000000.mlp.down_proj", "weight",
               TensorRole::Linear);
    expectName("model.layers.99999999999999999999.mlp.down_proj.weight", -1,
               "layers.99999999999999999999.mlp.down_proj", "weight", TensorRole::Linear);
    expectName("model.layers.-1.mlp.down_proj.weight", -1, "layers.-1.mlp.down_proj", "weight", TensorRole::Linear);
    expectName("model.layers.+3.mlp.down_proj.weight", -1, "layers.+3.mlp.down_proj", "weight", TensorRole::Linear);
}

TEST(TensorName, RoutersAreTheMoeGatesNotTheMlpGateProj) {
    for (const char* router : {"mlp.gate", "block_sparse_moe.gate", "mlp.router", "mlp.shared_expert_gate", "gate"})
        EXPECT_TRUE(isRouterModule(router)) << router;
    for (const char* linear : {"mlp.gate_proj", "mlp.experts.3.gate_proj", "mlp.experts.gate_up_proj",
                               "self_attn.q_proj", "mlp.gate.weight_scale", "mlp.routers_norm", ""})
        EXPECT_FALSE(isRouterModule(linear)) << linear;
}
