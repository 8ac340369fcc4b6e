#!/usr/bin/env python3
"""Write the tiny random Llama 4 checkpoints of the tests: tests/data/moe/llama4-tiny (Llama4ForCausalLM,
model_type llama4_text, the experts fused as transformers and the Hub store them), llama4-tiny-per-expert (the
same weights with one tensor per expert, as quantized releases and vLLM's expert mapping name them) and
llama4-vlm-tiny (Llama4ForConditionalGeneration: the same text tower under language_model., beside a small
vision_model and multi_modal_projector that exports copy through untouched).

The text model (transformers' modeling_llama4.py): 4 decoder layers, hidden 32, 4 query / 2 KV heads of 16;
layers 1 and 3 are MoE blocks (interleave_moe_layer_step 2: feed_forward.router, 4 experts of width 16 of which
2 route each token, feed_forward.shared_expert), layers 0 and 2 a dense feed_forward MLP of
intermediate_size_mlp 48; layers 0-2 rotate (interleaved pairs, the llama3 RoPE scaling of Scout-Instruct: factor
16, low and high frequency factors 1, 8192 positions) with the L2 q/k norm and chunked attention, layer 3 is NoPE (no_rope_layers [1, 1, 1, 0]) with temperature tuning. The chunk (8192),
the NoPE period (4), floor_scale (8192) and attn_scale (0.1) are llama.cpp's fixed values, so that its
llama4 graph computes this model. The weights are random (Python's own Mersenne Twister, fixed seeds); the
router's scale keeps the sigmoid scores between about 0.15 and 0.85, so that scaling the expert's input and
scaling its output differ.

The safetensors writer and the random weights are make-tiny-moe.py's (shared, not copied).
Pure Python (no numpy, no torch): python3 scripts/make-tiny-llama4.py [--repo PATH]
"""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "make_tiny_moe", os.path.join(os.path.dirname(os.path.abspath(__file__)), "make-tiny-moe.py"))
tiny = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tiny)

HIDDEN, HEADS, KV_HEADS, HEAD_DIM = 32, 4, 2, 16
EXPERTS, EXPERT_WIDTH, DENSE_WIDTH = 4, 16, 48
LAYERS = 4

TEXT = {"architectures": ["Llama4ForCausalLM"], "model_type": "llama4_text", "hidden_act": "silu",
        "hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM, "intermediate_size": EXPERT_WIDTH,
        "intermediate_size_mlp": DENSE_WIDTH, "num_local_experts": EXPERTS, "num_experts_per_tok": 2,
        "interleave_moe_layer_step": 2, "moe_layers": [1, 3], "no_rope_layers": [1, 1, 1, 0],
        "no_rope_layer_interval": 4, "layer_types": ["chunked_attention", "chunked_attention", "chunked_attention",
                                                     "full_attention"],
        "use_qk_norm": True, "attn_temperature_tuning": True, "floor_scale": 8192, "attn_scale": 0.1,
        "attention_chunk_size": 8192, "attention_bias": False, "attention_dropout": 0.0,
        "vocab_size": tiny.VOCAB, "max_position_embeddings": 16384, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
        "rope_scaling": {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0, "high_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192},
        "tie_word_embeddings": False, "torch_dtype": "float32", "bos_token_id": 256, "eos_token_id": 256,
        "pad_token_id": 256, "initializer_range": 0.02, "use_cache": True, "router_aux_loss_coef": 0.001,
        "router_jitter_noise": 0.0, "output_router_logits": False, "transformers_version": "4.51.0"}


def text_weights(prefix, lm_head, fused):
    """The text model's tensors, `prefix` before "layers." / "embed_tokens" / "norm"."""
    w = tiny.Weights(1611)
    w.matrix(prefix + "embed_tokens.weight", tiny.VOCAB, HIDDEN, 1.0)
    s = 1.0 / HIDDEN ** 0.5
    for i in range(LAYERS):
        p = "%slayers.%d." % (prefix, i)
        w.norm(p + "input_layernorm.weight", HIDDEN)
        w.matrix(p + "self_attn.q_proj.weight", HEADS * HEAD_DIM, HIDDEN, s)
        w.matrix(p + "self_attn.k_proj.weight", KV_HEADS * HEAD_DIM, HIDDEN, s)
        w.matrix(p + "self_attn.v_proj.weight", KV_HEADS * HEAD_DIM, HIDDEN, s)
        w.matrix(p + "self_attn.o_proj.weight", HIDDEN, HEADS * HEAD_DIM, 1.0 / (HEADS * HEAD_DIM) ** 0.5)
        w.norm(p + "post_attention_layernorm.weight", HIDDEN)
        if i not in TEXT["moe_layers"]:
            tiny.dense_mlp(w, p, "feed_forward.", HIDDEN, DENSE_WIDTH)
            continue
        w.matrix(p + "feed_forward.router.weight", EXPERTS, HIDDEN, 0.3)
        for e in range(EXPERTS):
            tiny.dense_mlp(w, p, "feed_forward.experts.%d." % e, HIDDEN, EXPERT_WIDTH)
        tiny.dense_mlp(w, p, "feed_forward.shared_expert.", HIDDEN, EXPERT_WIDTH)
    w.norm(prefix + "norm.weight", HIDDEN)
    w.matrix(lm_head, tiny.VOCAB, HIDDEN, 3.0 / HIDDEN ** 0.5)
    if fused:
        fuse_experts(w)
    return w


def fuse_experts(w):
    """Each layer's experts as Llama4TextExperts holds them: gate_up_proj [E, H, 2I] (x @ W: expert e's gate
    columns, then its up columns) and down_proj [E, I, H]."""
    by_name = {t[0]: t for t in w.tensors}
    blocks = sorted({name.split(".experts.")[0] for name in by_name if ".experts." in name})
    for block in blocks:
        gate_up, down = [], []
        for e in range(EXPERTS):
            x = "%s.experts.%d." % (block, e)
            gate = by_name.pop(x + "gate_proj.weight")[2]  # [I, H] row-major
            up = by_name.pop(x + "up_proj.weight")[2]
            d = by_name.pop(x + "down_proj.weight")[2]  # [H, I]
            for h in range(HIDDEN):
                gate_up += [gate[j * HIDDEN + h] for j in range(EXPERT_WIDTH)]
                gate_up += [up[j * HIDDEN + h] for j in range(EXPERT_WIDTH)]
            for j in range(EXPERT_WIDTH):
                down += [d[h * EXPERT_WIDTH + j] for h in range(HIDDEN)]
        name = block + ".experts.gate_up_proj"
        by_name[name] = (name, (EXPERTS, HIDDEN, 2 * EXPERT_WIDTH), gate_up)
        name = block + ".experts.down_proj"
        by_name[name] = (name, (EXPERTS, EXPERT_WIDTH, HIDDEN), down)
    w.tensors = list(by_name.values())


def llama4_tiny():
    return dict(TEXT), text_weights("model.", "lm_head.weight", fused=True)


def llama4_tiny_per_expert():
    return dict(TEXT), text_weights("model.", "lm_head.weight", fused=False)


def llama4_vlm_tiny():
    """Llama4ForConditionalGeneration's layout: the text tower under language_model.model. and
    language_model.lm_head, a two-layer stand-in for the vision tower (vision_model.*) and the projector
    (multi_modal_projector.linear_1), whose bytes an export must copy unchanged."""
    text = dict(TEXT)
    del text["architectures"]
    config = {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4", "text_config": text,
              "vision_config": {"model_type": "llama4_vision_model", "hidden_size": 16, "num_hidden_layers": 1,
                                "num_attention_heads": 2, "intermediate_size": 32, "vision_output_dim": 24,
                                "image_size": 28, "patch_size": 14, "num_channels": 3, "pixel_shuffle_ratio": 0.5,
                                "projector_input_dim": 16, "projector_output_dim": 16},
              "boi_token_index": 200080, "eoi_token_index": 200081, "image_token_index": 200092,
              "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": "4.51.0"}
    w = text_weights("language_model.model.", "language_model.lm_head.weight", fused=True)
    v = tiny.Weights(1612)
    v.matrix("vision_model.patch_embedding.linear.weight", 16, 3 * 14 * 14, 0.05)
    v.matrix("vision_model.model.layers.0.self_attn.q_proj.weight", 16, 16, 0.25)
    v.vector("vision_model.model.layers.0.self_attn.q_proj.bias", 16, -0.1, 0.1)
    v.matrix("vision_model.model.layers.0.mlp.fc1.weight", 32, 16, 0.25)
    v.norm("vision_model.layernorm_post.weight", 16)
    v.matrix("vision_model.vision_adapter.mlp.fc1.weight", 16, 64, 0.1)
    v.matrix("multi_modal_projector.linear_1.weight", HIDDEN, 24, 0.2)
    w.tensors += v.tensors
    return config, w


def main():
    tiny.write_checkpoints("moe", (("llama4-tiny", llama4_tiny), ("llama4-tiny-per-expert", llama4_tiny_per_expert),
                                   ("llama4-vlm-tiny", llama4_vlm_tiny)))


if __name__ == "__main__":
    main()
