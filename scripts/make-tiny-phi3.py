#!/usr/bin/env python3
"""Write the tiny random Phi-3 checkpoints of the tests: tests/data/phi3/tiny-random and tiny-random-longrope.

Both are Phi3ForCausalLM (model_type phi3) in Hugging Face's layout: q/k/v fused as
`self_attn.qkv_proj.weight` [q_dim + 2 * kv_dim, hidden] (q rows, then k, then v) and gate/up fused as
`mlp.gate_up_proj.weight` [2 * intermediate, hidden] (gate rows, then up: Phi3MLP chunks the output in
two and multiplies silu(gate) by up). 3 layers, hidden 64, 4 query / 2 KV heads of 16, MLP 96.

tiny-random: default RoPE (theta 10000), untied lm_head, sliding_window 2047 (as Phi-3-mini-4k).
tiny-random-longrope: as Phi-4-mini: partial_rotary_factor 0.75 (12 of 16 dimensions rotate), LongRoPE
(short_factor / long_factor of 6 values, original_max_position_embeddings 256, max_position_embeddings
8192: attention factor sqrt(1 + ln(32) / ln(256))), tied embedding, sliding_window 262144.

The safetensors writer and the random weights are make-tiny-moe.py's (shared, not copied).
The folder names avoid "phi3" (llama.cpp gives a model named so Phi-3's token attributes: tests/data/phi3/README.md).
Pure Python: python3 scripts/make-tiny-phi3.py [--repo PATH]
"""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location("make_tiny_moe", os.path.join(os.path.dirname(os.path.abspath(__file__)), "make-tiny-moe.py"))
tiny = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tiny)

HIDDEN, HEADS, KV_HEADS, FF, LAYERS = 64, 4, 2, 96, 3
HEAD_DIM = HIDDEN // HEADS   # Phi3Config has no head_dim: hidden_size / num_attention_heads


def decoder(w, tied):
    s = 1.0 / HIDDEN ** 0.5
    w.matrix("model.embed_tokens.weight", tiny.VOCAB, HIDDEN, 1.0)
    for i in range(LAYERS):
        p = "model.layers.%d." % i
        w.norm(p + "input_layernorm.weight", HIDDEN)
        w.matrix(p + "self_attn.qkv_proj.weight", (HEADS + 2 * KV_HEADS) * HEAD_DIM, HIDDEN, s)
        w.matrix(p + "self_attn.o_proj.weight", HIDDEN, HEADS * HEAD_DIM, 1.0 / (HEADS * HEAD_DIM) ** 0.5)
        w.norm(p + "post_attention_layernorm.weight", HIDDEN)
        w.matrix(p + "mlp.gate_up_proj.weight", 2 * FF, HIDDEN, 1.5 * s)
        w.matrix(p + "mlp.down_proj.weight", HIDDEN, FF, 1.5 / FF ** 0.5)
    w.norm("model.norm.weight", HIDDEN)
    if not tied:
        w.matrix("lm_head.weight", tiny.VOCAB, HIDDEN, 3.0 / HIDDEN ** 0.5)


COMMON = {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_act": "silu", "hidden_size": HIDDEN,
          "intermediate_size": FF, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
          "num_key_value_heads": KV_HEADS, "vocab_size": tiny.VOCAB, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
          "attention_bias": False, "attention_dropout": 0.0, "embd_pdrop": 0.0, "resid_pdrop": 0.0,
          "bos_token_id": 256, "eos_token_id": 256, "pad_token_id": 0, "initializer_range": 0.02, "use_cache": True,
          "torch_dtype": "float32", "transformers_version": "4.53.0"}


def phi3():
    c = dict(COMMON, max_position_embeddings=4096, original_max_position_embeddings=4096, rope_scaling=None,
             sliding_window=2047, tie_word_embeddings=False)
    w = tiny.Weights(1901)
    decoder(w, False)
    return c, w


def phi3_longrope():
    half = int(HEAD_DIM * 0.75) // 2
    c = dict(COMMON, max_position_embeddings=8192, original_max_position_embeddings=256, partial_rotary_factor=0.75,
             sliding_window=262144, tie_word_embeddings=True,
             rope_scaling={"type": "longrope", "short_factor": [1.0 + 0.25 * i for i in range(half)],
                           "long_factor": [1.0 + 3.0 * i for i in range(half)]})
    w = tiny.Weights(1902)
    decoder(w, True)
    return c, w


def main():
    tiny.write_checkpoints("phi3", (("tiny-random", phi3), ("tiny-random-longrope", phi3_longrope)))


if __name__ == "__main__":
    main()
