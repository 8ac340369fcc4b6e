#!/usr/bin/env python3
"""Write the tiny random VLM checkpoints of the tests: tests/data/vlm/*.

Each is a vision-language model in the exact Hugging Face layout of its class, whose text tower
QuantScope runs and quantizes while the (small, fake) vision tower is copied through untouched:

  qwen2_5-vl-tiny       Qwen2_5_VLForConditionalGeneration as transformers >= 4.52 saves it: text_config,
                        `model.language_model.layers.N.`, `model.visual.`, `lm_head.weight`.
  qwen2_5-vl-old-tiny   the same model as the published Qwen2.5-VL checkpoints are laid out (written before
                        4.52): the text fields at the top level of config.json with rope_scaling type
                        "mrope", `model.layers.N.`, `visual.`; the same weights as qwen2_5-vl-tiny.
  qwen3-vl-tiny         Qwen3VLForConditionalGeneration (dense): text_config with q/k norms and the
                        interleaved mRoPE, `model.language_model.`, `model.visual.` with a deepstack merger;
                        its embedding tied (as the 2B's and 4B's).
  mistral3-tiny         Mistral3ForConditionalGeneration as >= 4.52 saves it: `model.language_model.`,
                        `model.vision_tower.`, `model.multi_modal_projector.`, `lm_head.weight`.
  mistral3-old-tiny     the older layout: `language_model.model.`, `language_model.lm_head.weight`,
                        `vision_tower.`, `multi_modal_projector.`; the same weights as mistral3-tiny.

The names follow transformers' modeling code (the _checkpoint_conversion_mapping of each class maps the
old layout onto the new). The mRoPE sections sum to head_dim / 2 as Qwen's do. The vision towers hold
linears named like the text tower's (q_proj, gate_proj, layers.0.) so that an export that mistook them
for decoder layers would show.

The safetensors writer and the random weights are make-tiny-moe.py's (shared, not copied).
Pure Python: python3 scripts/make-tiny-vlm.py [--repo PATH]
"""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location("make_tiny_moe", os.path.join(os.path.dirname(os.path.abspath(__file__)), "make-tiny-moe.py"))
tiny = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tiny)

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FF, LAYERS = 32, 4, 2, 16, 48, 3
MROPE_SECTION = [2, 3, 3]   # sums to HEAD_DIM / 2, as [24, 20, 20] does for Qwen3-VL's 128
# Qwen2 has no head_dim key: hidden_size / heads = 8, sections summing to 4 (as [16, 24, 24] to 64).
QWEN2_HEAD_DIM, QWEN2_MROPE_SECTION = HIDDEN // HEADS, [1, 1, 2]


def vector(w, name, n, scale):
    w.matrix(name, 1, n, scale)
    w.tensors[-1] = (name, (n,), w.tensors[-1][2])


def decoder(w, prefix, lm_head, qkv_bias=False, qk_norm=False, head_dim=HEAD_DIM):
    s = 1.0 / HIDDEN ** 0.5
    w.matrix(prefix + "embed_tokens.weight", tiny.VOCAB, HIDDEN, 1.0)
    for i in range(LAYERS):
        p = "%slayers.%d." % (prefix, i)
        tiny.attention(w, p, HIDDEN, HEADS, KV_HEADS, head_dim, qk_norm)
        if qkv_bias:
            for m, n in (("q_proj", HEADS * head_dim), ("k_proj", KV_HEADS * head_dim), ("v_proj", KV_HEADS * head_dim)):
                vector(w, p + "self_attn.%s.bias" % m, n, 0.5)
        w.matrix(p + "mlp.gate_proj.weight", FF, HIDDEN, 1.5 * s)
        w.matrix(p + "mlp.up_proj.weight", FF, HIDDEN, 1.5 * s)
        w.matrix(p + "mlp.down_proj.weight", HIDDEN, FF, 1.5 / FF ** 0.5)
    w.norm(prefix + "norm.weight", HIDDEN)
    if lm_head:
        w.matrix(lm_head, tiny.VOCAB, HIDDEN, 3.0 / HIDDEN ** 0.5)


TEXT = {"hidden_act": "silu", "hidden_size": HIDDEN, "intermediate_size": FF, "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "vocab_size": tiny.VOCAB,
        "max_position_embeddings": 1024, "rms_norm_eps": 1e-6, "attention_dropout": 0.0, "initializer_range": 0.02,
        "use_cache": True, "bos_token_id": 256, "eos_token_id": 256, "torch_dtype": "float32"}
QWEN_TEXT = dict(TEXT, rope_theta=1000000.0, use_sliding_window=False, sliding_window=32768, max_window_layers=LAYERS)


def qwen2_5_vision(w, v):
    w.matrix(v + "patch_embed.proj.weight", 16, 3 * 2 * 4 * 4, 0.2)
    w.tensors[-1] = (w.tensors[-1][0], (16, 3, 2, 4, 4), w.tensors[-1][2])   # a Conv3d kernel, rank 5
    b = v + "blocks.0."
    w.norm(b + "norm1.weight", 16)
    w.norm(b + "norm2.weight", 16)
    w.matrix(b + "attn.qkv.weight", 48, 16, 0.25)
    vector(w, b + "attn.qkv.bias", 48, 0.1)
    w.matrix(b + "attn.proj.weight", 16, 16, 0.25)
    vector(w, b + "attn.proj.bias", 16, 0.1)
    for m, rows, cols in (("gate_proj", 32, 16), ("up_proj", 32, 16), ("down_proj", 16, 32)):
        w.matrix(b + "mlp.%s.weight" % m, rows, cols, 0.25)
        vector(w, b + "mlp.%s.bias" % m, rows, 0.1)
    w.norm(v + "merger.ln_q.weight", 16)
    w.matrix(v + "merger.mlp.0.weight", 64, 64, 0.1)
    vector(w, v + "merger.mlp.0.bias", 64, 0.1)
    w.matrix(v + "merger.mlp.2.weight", HIDDEN, 64, 0.1)
    vector(w, v + "merger.mlp.2.bias", HIDDEN, 0.1)


QWEN2_5_VISION_CONFIG = {"depth": 1, "hidden_size": 16, "intermediate_size": 32, "num_heads": 2, "in_chans": 3,
                         "out_hidden_size": HIDDEN, "patch_size": 4, "spatial_merge_size": 2, "temporal_patch_size": 2,
                         "window_size": 16, "fullatt_block_indexes": [0], "hidden_act": "silu", "model_type": "qwen2_5_vl"}
QWEN2_5_IDS = {"image_token_id": 300, "video_token_id": 301, "vision_start_token_id": 302, "vision_end_token_id": 303}


def qwen2_5_vl():
    text = dict(QWEN_TEXT, model_type="qwen2_5_vl_text", tie_word_embeddings=False,
                rope_scaling={"type": "default", "rope_type": "default", "mrope_section": QWEN2_MROPE_SECTION})
    c = dict(QWEN2_5_IDS, architectures=["Qwen2_5_VLForConditionalGeneration"], model_type="qwen2_5_vl", text_config=text,
             vision_config=QWEN2_5_VISION_CONFIG, tie_word_embeddings=False, torch_dtype="float32",
             transformers_version="4.53.0")
    w = tiny.Weights(1801)
    decoder(w, "model.language_model.", "lm_head.weight", qkv_bias=True, head_dim=QWEN2_HEAD_DIM)
    qwen2_5_vision(w, "model.visual.")
    return c, w


def qwen2_5_vl_old():
    c = dict(QWEN_TEXT, **QWEN2_5_IDS, architectures=["Qwen2_5_VLForConditionalGeneration"], model_type="qwen2_5_vl",
             vision_config=QWEN2_5_VISION_CONFIG, tie_word_embeddings=False,
             rope_scaling={"type": "mrope", "mrope_section": QWEN2_MROPE_SECTION}, transformers_version="4.49.0.dev0")
    w = tiny.Weights(1801)   # qwen2_5-vl-tiny's weights under the old names
    decoder(w, "model.", "lm_head.weight", qkv_bias=True, head_dim=QWEN2_HEAD_DIM)
    qwen2_5_vision(w, "visual.")
    return c, w


def qwen3_vl():
    text = dict(QWEN_TEXT, model_type="qwen3_vl_text", head_dim=HEAD_DIM, attention_bias=False, tie_word_embeddings=True,
                rope_theta=5000000.0, rope_scaling={"rope_type": "default", "mrope_section": MROPE_SECTION, "mrope_interleaved": True})
    for key in ("use_sliding_window", "sliding_window", "max_window_layers"):
        text.pop(key)
    vision = {"model_type": "qwen3_vl", "depth": 2, "hidden_size": 16, "intermediate_size": 32, "num_heads": 2, "in_channels": 3,
              "out_hidden_size": HIDDEN, "patch_size": 4, "spatial_merge_size": 2, "temporal_patch_size": 2,
              "num_position_embeddings": 16, "deepstack_visual_indexes": [0], "hidden_act": "gelu_pytorch_tanh"}
    c = {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl", "text_config": text,
         "vision_config": vision, "image_token_id": 300, "video_token_id": 301, "vision_start_token_id": 302,
         "vision_end_token_id": 303, "tie_word_embeddings": True, "dtype": "float32", "transformers_version": "4.57.0"}
    w = tiny.Weights(1803)
    decoder(w, "model.language_model.", None, qk_norm=True)   # tied, as the 2B and 4B
    v = "model.visual."
    w.matrix(v + "patch_embed.proj.weight", 16, 3 * 2 * 4 * 4, 0.2)
    w.tensors[-1] = (w.tensors[-1][0], (16, 3, 2, 4, 4), w.tensors[-1][2])
    vector(w, v + "patch_embed.proj.bias", 16, 0.1)
    w.matrix(v + "pos_embed.weight", 16, 16, 0.2)
    for i in range(2):
        b = v + "blocks.%d." % i
        for n in ("norm1", "norm2"):
            w.norm(b + n + ".weight", 16)
            vector(w, b + n + ".bias", 16, 0.1)
        w.matrix(b + "attn.qkv.weight", 48, 16, 0.25)
        w.matrix(b + "attn.proj.weight", 16, 16, 0.25)
        w.matrix(b + "mlp.linear_fc1.weight", 32, 16, 0.25)
        w.matrix(b + "mlp.linear_fc2.weight", 16, 32, 0.25)
    for m in ("merger.", "deepstack_merger_list.0."):
        w.norm(v + m + "norm.weight", 16 if m == "merger." else 64)
        w.matrix(v + m + "linear_fc1.weight", 64, 64, 0.1)
        w.matrix(v + m + "linear_fc2.weight", HIDDEN, 64, 0.1)
    return c, w


def mistral3_config():
    text = dict(TEXT, model_type="mistral", head_dim=HEAD_DIM, rope_theta=1000000000.0, sliding_window=None,
                tie_word_embeddings=False)
    vision = {"model_type": "pixtral", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
              "num_attention_heads": 2, "head_dim": 8, "image_size": 16, "patch_size": 4, "num_channels": 3,
              "rope_theta": 10000.0, "hidden_act": "silu"}
    return {"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3", "text_config": text,
            "vision_config": vision, "image_token_index": 300, "multimodal_projector_bias": False,
            "projector_hidden_act": "gelu", "spatial_merge_size": 2, "vision_feature_layer": -1, "torch_dtype": "float32",
            "transformers_version": "4.53.0"}


def mistral3_vision(w, tower, projector):
    w.matrix(tower + "patch_conv.weight", 16, 48, 0.2)
    w.tensors[-1] = (w.tensors[-1][0], (16, 3, 4, 4), w.tensors[-1][2])
    w.norm(tower + "ln_pre.weight", 16)
    l = tower + "transformer.layers.0."
    for m in ("q_proj", "k_proj", "v_proj", "o_proj"):   # named like the text tower's linears: never quantized
        w.matrix(l + "attention.%s.weight" % m, 16, 16, 0.25)
    for m, rows, cols in (("gate_proj", 32, 16), ("up_proj", 32, 16), ("down_proj", 16, 32)):
        w.matrix(l + "feed_forward.%s.weight" % m, rows, cols, 0.25)
    w.norm(l + "attention_norm.weight", 16)
    w.norm(l + "ffn_norm.weight", 16)
    w.norm(projector + "norm.weight", 16)
    w.matrix(projector + "patch_merger.merging_layer.weight", 16, 64, 0.1)
    w.matrix(projector + "linear_1.weight", HIDDEN, 16, 0.2)
    w.matrix(projector + "linear_2.weight", HIDDEN, HIDDEN, 0.2)


def mistral3():
    w = tiny.Weights(1804)
    decoder(w, "model.language_model.", "lm_head.weight")
    mistral3_vision(w, "model.vision_tower.", "model.multi_modal_projector.")
    return mistral3_config(), w


def mistral3_old():
    w = tiny.Weights(1804)   # mistral3-tiny's weights under the old names
    decoder(w, "language_model.model.", "language_model.lm_head.weight")
    mistral3_vision(w, "vision_tower.", "multi_modal_projector.")
    return mistral3_config(), w


def main():
    tiny.write_checkpoints("vlm", (("qwen2_5-vl-tiny", qwen2_5_vl), ("qwen2_5-vl-old-tiny", qwen2_5_vl_old),
                                   ("qwen3-vl-tiny", qwen3_vl), ("mistral3-tiny", mistral3), ("mistral3-old-tiny", mistral3_old)))


if __name__ == "__main__":
    main()
