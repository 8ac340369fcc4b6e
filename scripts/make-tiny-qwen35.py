#!/usr/bin/env python3
"""Write the tiny random Qwen3.5 checkpoints of the tests: tests/data/qwen35/qwen35-tiny, qwen35-vl-tiny and
qwen35-moe-tiny.

Each is config.json + model.safetensors (F32) in the exact Hugging Face layout of transformers' Qwen3.5 classes:
- qwen35-tiny: Qwen3_5ForCausalLM (model_type qwen3_5_text), 4 layers of layer_types linear_attention,
  full_attention, linear_attention, full_attention. A linear layer is the Gated DeltaNet
  (`linear_attn.in_proj_qkv`, `in_proj_z`, `in_proj_b`, `in_proj_a`, `conv1d.weight` [channels, 1, 4], `A_log`,
  `dt_bias`, `norm.weight`, `out_proj`) with 2 key heads and 8 value heads of 32, so that the value heads are
  grouped by key head; a full layer is gated attention (q_proj gives 4 heads of 32 plus their output gates,
  2 key/value heads, q/k norms, partial_rotary_factor 0.25, interleaved M-RoPE sections [2, 1, 1]). The norms
  are stored as Qwen3.5 stores them, around 0 (the model multiplies by 1 + w), the DeltaNet's gated norm
  around 1. One multi-token-prediction layer (`mtp.*`, mtp_num_hidden_layers 1) that nothing runs and every
  export copies.
- qwen35-vl-tiny: Qwen3_5ForConditionalGeneration (model_type qwen3_5): the same text weights under
  `model.language_model.`, the config under text_config, and a small fake vision tower (`model.visual.*`).
- qwen35-moe-tiny: Qwen3_5MoeForCausalLM (model_type qwen3_5_moe_text): the same attention layers, and in every
  layer 8 experts (softmax router `mlp.gate`, top 2, always renormalised) stored fused as transformers 5
  saves them (`mlp.experts.gate_up_proj` [8, 32, 32], `mlp.experts.down_proj` [8, 32, 16]), plus a shared
  expert (`mlp.shared_expert.*`, 32 wide) scaled by sigmoid(`mlp.shared_expert_gate`).
The tokenizer files are the demo's (resources/demo/, byte level, vocabulary 320). The weights are random
(Python's Mersenne Twister, fixed seeds); the safetensors writer and the random weights are make-tiny-moe.py's.
Pure Python: python3 scripts/make-tiny-qwen35.py [--repo PATH]
"""
import importlib.util
import math
import os

_spec = importlib.util.spec_from_file_location("make_tiny_moe", os.path.join(os.path.dirname(os.path.abspath(__file__)), "make-tiny-moe.py"))
tiny = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tiny)

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FF = 32, 4, 2, 32, 48
K_HEADS, V_HEADS, K_DIM, V_DIM, KERNEL = 2, 8, 32, 32, 4
LAYER_TYPES = ["linear_attention", "full_attention", "linear_attention", "full_attention"]
EXPERTS, TOP_K, EXPERT_FF, SHARED_FF = 8, 2, 16, 32


class Qwen35Weights(tiny.Weights):
    def offset_norm(self, name, n):
        # Qwen3.5 stores w and scales by 1 + w: weights around 0.
        self.tensors.append((name, (n,), [self.rng.uniform(-0.3, 0.3) for _ in range(n)]))

    def tensor(self, name, shape, values):
        self.tensors.append((name, tuple(shape), values))


def gated_delta_net(w, p):
    s = 1.0 / HIDDEN ** 0.5
    conv_dim = 2 * K_HEADS * K_DIM + V_HEADS * V_DIM
    w.matrix(p + "linear_attn.in_proj_qkv.weight", conv_dim, HIDDEN, 1.5 * s)
    w.matrix(p + "linear_attn.in_proj_z.weight", V_HEADS * V_DIM, HIDDEN, 1.5 * s)
    w.matrix(p + "linear_attn.in_proj_b.weight", V_HEADS, HIDDEN, 2.0 * s)
    w.matrix(p + "linear_attn.in_proj_a.weight", V_HEADS, HIDDEN, 2.0 * s)
    w.tensor(p + "linear_attn.conv1d.weight", (conv_dim, 1, KERNEL),
             [w.rng.gauss(0.0, 0.6) for _ in range(conv_dim * KERNEL)])
    # A between 0.05 and 2: decays that keep a memory over tens of tokens.
    w.tensor(p + "linear_attn.A_log", (V_HEADS,), [math.log(w.rng.uniform(0.05, 2.0)) for _ in range(V_HEADS)])
    w.vector(p + "linear_attn.dt_bias", V_HEADS, -1.0, 1.0)
    w.norm(p + "linear_attn.norm.weight", V_DIM)
    w.matrix(p + "linear_attn.out_proj.weight", HIDDEN, V_HEADS * V_DIM, 1.5 / (V_HEADS * V_DIM) ** 0.5)


def gated_attention(w, p):
    s = 1.0 / HIDDEN ** 0.5
    w.matrix(p + "self_attn.q_proj.weight", 2 * HEADS * HEAD_DIM, HIDDEN, s)
    w.matrix(p + "self_attn.k_proj.weight", KV_HEADS * HEAD_DIM, HIDDEN, s)
    w.matrix(p + "self_attn.v_proj.weight", KV_HEADS * HEAD_DIM, HIDDEN, s)
    w.matrix(p + "self_attn.o_proj.weight", HIDDEN, HEADS * HEAD_DIM, 1.5 / (HEADS * HEAD_DIM) ** 0.5)
    w.offset_norm(p + "self_attn.q_norm.weight", HEAD_DIM)
    w.offset_norm(p + "self_attn.k_norm.weight", HEAD_DIM)


def moe_block(w, p):
    w.matrix(p + "mlp.gate.weight", EXPERTS, HIDDEN, 1.0)
    gate_up, down = [], []
    for _ in range(EXPERTS):
        gate_up += [w.rng.gauss(0.0, 1.5 / HIDDEN ** 0.5) for _ in range(2 * EXPERT_FF * HIDDEN)]
        down += [w.rng.gauss(0.0, 1.5 / EXPERT_FF ** 0.5) for _ in range(HIDDEN * EXPERT_FF)]
    w.tensor(p + "mlp.experts.gate_up_proj", (EXPERTS, 2 * EXPERT_FF, HIDDEN), gate_up)
    w.tensor(p + "mlp.experts.down_proj", (EXPERTS, HIDDEN, EXPERT_FF), down)
    tiny.dense_mlp(w, p, "mlp.shared_expert.", HIDDEN, SHARED_FF)
    w.matrix(p + "mlp.shared_expert_gate.weight", 1, HIDDEN, 2.0 / HIDDEN ** 0.5)


def layer(w, p, layer_type, moe):
    w.offset_norm(p + "input_layernorm.weight", HIDDEN)
    if layer_type == "linear_attention":
        gated_delta_net(w, p)
    else:
        gated_attention(w, p)
    w.offset_norm(p + "post_attention_layernorm.weight", HIDDEN)
    if moe:
        moe_block(w, p)
    else:
        tiny.dense_mlp(w, p, "mlp.", HIDDEN, FF)


def mtp(w, moe):
    # Qwen3.5's multi-token prediction: one full-attention layer with its own norms and the fc joining the
    # embedding and the hidden state; stored beside the decoder, never run here.
    w.matrix("mtp.fc.weight", HIDDEN, 2 * HIDDEN, 1.0 / (2 * HIDDEN) ** 0.5)
    w.offset_norm("mtp.pre_fc_norm_embedding.weight", HIDDEN)
    w.offset_norm("mtp.pre_fc_norm_hidden.weight", HIDDEN)
    layer(w, "mtp.layers.0.", "full_attention", moe)
    w.offset_norm("mtp.norm.weight", HIDDEN)


def text_weights(seed, prefix, moe):
    w = Qwen35Weights(seed)
    w.matrix(prefix + "embed_tokens.weight", tiny.VOCAB, HIDDEN, 1.0)
    for i, t in enumerate(LAYER_TYPES):
        layer(w, "%slayers.%d." % (prefix, i), t, moe)
    w.offset_norm(prefix + "norm.weight", HIDDEN)
    w.matrix("lm_head.weight", tiny.VOCAB, HIDDEN, 3.0 / HIDDEN ** 0.5)
    mtp(w, moe)
    return w


def text_config(model_type, moe):
    c = {"model_type": model_type, "hidden_act": "silu", "hidden_size": HIDDEN, "num_hidden_layers": len(LAYER_TYPES),
         "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM, "vocab_size": tiny.VOCAB,
         "max_position_embeddings": 1024, "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "attention_bias": False,
         "attention_dropout": 0.0, "initializer_range": 0.02, "use_cache": True, "dtype": "float32",
         "bos_token_id": 256, "eos_token_id": 256, "layer_types": LAYER_TYPES, "full_attention_interval": 2,
         "linear_conv_kernel_dim": KERNEL, "linear_key_head_dim": K_DIM, "linear_value_head_dim": V_DIM,
         "linear_num_key_heads": K_HEADS, "linear_num_value_heads": V_HEADS, "mtp_num_hidden_layers": 1,
         "mtp_use_dedicated_embeddings": False,
         "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25,
                             "mrope_section": [2, 1, 1], "mrope_interleaved": True}}
    if moe:
        c.update({"num_experts": EXPERTS, "num_experts_per_tok": TOP_K, "moe_intermediate_size": EXPERT_FF,
                  "shared_expert_intermediate_size": SHARED_FF, "router_aux_loss_coef": 0.001,
                  "output_router_logits": False})
    else:
        c["intermediate_size"] = FF
    return c


def qwen35():
    c = dict(text_config("qwen3_5_text", False), architectures=["Qwen3_5ForCausalLM"], transformers_version="5.2.0")
    return c, text_weights(3501, "model.", False)


def qwen35_moe():
    c = dict(text_config("qwen3_5_moe_text", True), architectures=["Qwen3_5MoeForCausalLM"],
             transformers_version="5.2.0")
    return c, text_weights(3502, "model.", True)


def qwen35_vl():
    text = text_config("qwen3_5_text", False)
    c = {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5", "text_config": text,
         "vision_config": {"model_type": "qwen3_5", "depth": 1, "hidden_size": 16, "intermediate_size": 32,
                           "num_heads": 2, "in_channels": 3, "patch_size": 2, "spatial_merge_size": 2,
                           "temporal_patch_size": 2, "out_hidden_size": HIDDEN, "num_position_embeddings": 16},
         "image_token_id": 300, "video_token_id": 301, "vision_start_token_id": 302, "vision_end_token_id": 303,
         "tie_word_embeddings": False, "transformers_version": "5.2.0"}
    w = text_weights(3501, "model.language_model.", False)  # the text tower is qwen35-tiny's
    v = "model.visual."
    w.matrix(v + "patch_embed.proj.weight", 16, 3 * 2 * 2 * 2, 0.2)
    w.vector(v + "patch_embed.proj.bias", 16, -0.1, 0.1)
    w.matrix(v + "pos_embed.weight", 16, 16, 0.2)
    w.matrix(v + "blocks.0.attn.qkv.weight", 48, 16, 0.2)
    w.matrix(v + "blocks.0.attn.proj.weight", 16, 16, 0.2)
    w.matrix(v + "blocks.0.mlp.linear_fc1.weight", 32, 16, 0.2)
    w.matrix(v + "blocks.0.mlp.linear_fc2.weight", 16, 32, 0.2)
    w.norm(v + "blocks.0.norm1.weight", 16)
    w.norm(v + "merger.norm.weight", 16)
    w.matrix(v + "merger.linear_fc1.weight", 64, 64, 0.1)
    w.matrix(v + "merger.linear_fc2.weight", HIDDEN, 64, 0.1)
    return c, w


def main():
    tiny.write_checkpoints("qwen35", (("qwen35-tiny", qwen35), ("qwen35-vl-tiny", qwen35_vl),
                                      ("qwen35-moe-tiny", qwen35_moe)))


if __name__ == "__main__":
    main()
