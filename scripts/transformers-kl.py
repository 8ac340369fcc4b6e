#!/usr/bin/env python3
"""Our forward pass against transformers' own, on the tiny checkpoint of every family QuantScope runs.

For each checkpoint below, the same token ids go through `quantscope-cli logits` (on each --devices
entry: the CPU, and the CUDA backend on a GPU machine) and through transformers' model class for that
checkpoint, in float64 on the CPU (float32 where a model will not run in float64). Per position the
next-token distributions are compared: KL(transformers || QuantScope), the top token, the largest
logit difference. A checkpoint passes when the mean KL is below 1e-5 and the top tokens agree on at
least 98 % of the positions: the bar the llama.cpp comparisons of tests/interop set.

The checkpoints: the tiny random ones of tests/data (scripts/make-tiny-*.py), the demo (qwen3),
stories260K (llama), make_checkpoint's synthetic Llama (the pipeline tests' generator), and two made
here from those, for the families without a file of their own: Mistral (the synthetic Llama with a
sliding window shorter than the ids) and Qwen2 (the Qwen2.5-VL text tower, without its vision tower and
its multimodal RoPE). The ids are the bytes of resources/text/the-verdict.txt (every vocabulary here
has at least 256 ids; the VLMs' image tokens are above them), as many as the model's positions allow,
at most --positions.

A family that this transformers does not know is skipped, with a line saying so; a checkpoint that
transformers cannot load or run is reported as not checked, with its error. Without torch and
transformers only our side runs (each logits run must succeed), which is what a CPU machine here
can do. Needs only the standard library for that; torch, transformers and safetensors for the rest.

  scripts/transformers-kl.py --cli BUNDLE/bin/quantscope-cli --make-checkpoint BUNDLE/bin/make_checkpoint \\
      [--devices cpu,cuda] [--positions 300] [--json FILE] [--only REGEX] [--work DIR]
Exits 1 when a checkpoint fails (or our side errs), 0 otherwise.
"""
import argparse
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_MEAN_KL = 1e-5
MIN_SAME_TOP = 0.98
# Tensors of a VLM that a text-only forward pass never reads: transformers may leave them
# uninitialised (the tiny checkpoints' vision towers are small fakes) without it mattering here.
VISION_NAMES = re.compile(r"(^|\.)(visual|vision_tower|vision_model|multi_modal_projector|mm_projector)\.")


def tree(*parts):
    return os.path.join(ROOT, *parts)


# --- the checkpoints ----------------------------------------------------------------------------


def copy_safetensors(src, dst, keep):
    """Writes the tensors of `src` whose name `keep` accepts into `dst`, bytes unchanged."""
    with open(src, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    out, blobs, offset = {}, [], 0
    for name in sorted(n for n in header if n != "__metadata__" and keep(n)):
        entry = dict(header[name])
        begin, end = entry["data_offsets"]
        blobs.append(data[begin:end])
        entry["data_offsets"] = [offset, offset + end - begin]
        offset += end - begin
        out[name] = entry
    out["__metadata__"] = header.get("__metadata__", {"format": "pt"})
    text = json.dumps(out, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def write_config(folder, config):
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


def synthetic_llama(work, make_checkpoint):
    folder = os.path.join(work, "synthetic-llama")
    if not os.path.isdir(folder):
        subprocess.run([make_checkpoint, folder, "--layers", "2", "--hidden", "64", "--intermediate", "128",
                        "--heads", "4", "--kv-heads", "2", "--vocab", "320", "--dtype", "f32"],
                       check=True, stdout=subprocess.DEVNULL)
    return folder


def synthetic_mistral(work, make_checkpoint):
    """The synthetic Llama as Mistral: the same tensors, and a window of 64 positions."""
    llama = synthetic_llama(work, make_checkpoint)
    folder = os.path.join(work, "synthetic-mistral")
    os.makedirs(folder, exist_ok=True)
    shutil.copyfile(os.path.join(llama, "model.safetensors"), os.path.join(folder, "model.safetensors"))
    with open(os.path.join(llama, "config.json")) as f:
        config = json.load(f)
    config.update({"architectures": ["MistralForCausalLM"], "model_type": "mistral", "sliding_window": 64})
    write_config(folder, config)
    return folder


def qwen2_from_vl(work, _make_checkpoint):
    """Qwen2.5-VL's text tower is a Qwen2 decoder: its old layout keeps the text fields at the top of
    config.json and the decoder under model.; without the vision tower and mRoPE it is a Qwen2."""
    source = tree("tests", "data", "vlm", "qwen2_5-vl-old-tiny")
    folder = os.path.join(work, "qwen2-from-vl")
    os.makedirs(folder, exist_ok=True)
    copy_safetensors(os.path.join(source, "model.safetensors"), os.path.join(folder, "model.safetensors"),
                     lambda name: not name.startswith("visual."))
    with open(os.path.join(source, "config.json")) as f:
        config = json.load(f)
    for key in ("vision_config", "rope_scaling", "image_token_id", "video_token_id", "vision_start_token_id",
                "vision_end_token_id"):
        config.pop(key, None)
    config.update({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"})
    write_config(folder, config)
    return folder


def kimi_as_deepseek(work, _make_checkpoint):
    """Kimi-K2 ships DeepseekV3ForCausalLM under model_type kimi_k2, which transformers does not map (its
    release loads with trust_remote_code); Moonshot's own advice is to read it as deepseek_v3."""
    source = tree("tests", "data", "moe", "kimi-k2-tiny")
    folder = os.path.join(work, "kimi-k2-as-deepseek")
    os.makedirs(folder, exist_ok=True)
    shutil.copyfile(os.path.join(source, "model.safetensors"), os.path.join(folder, "model.safetensors"))
    with open(os.path.join(source, "config.json")) as f:
        config = json.load(f)
    config.update({"model_type": "deepseek_v3"})
    write_config(folder, config)
    return folder


def stored(*parts):
    return lambda _work, _make: tree(*parts)


# (family, what, how to get its folder): every family of core/model/architectures that runs.
CHECKPOINTS = [
    ("llama", "stories260K", stored("resources", "models", "stories260K")),
    ("llama", "make_checkpoint", synthetic_llama),
    ("mistral", "make_checkpoint as mistral, window 64", synthetic_mistral),
    ("qwen2", "qwen2_5-vl-old-tiny's text tower", qwen2_from_vl),
    ("qwen3", "resources/demo", stored("resources", "demo")),
    ("qwen3_moe", "qwen3-moe-tiny", stored("tests", "data", "moe", "qwen3-moe-tiny")),
    ("mixtral", "mixtral-tiny", stored("tests", "data", "moe", "mixtral-tiny")),
    ("deepseek_v3", "deepseek-v3-tiny", stored("tests", "data", "moe", "deepseek-v3-tiny")),
    ("deepseek_v3", "kimi-k2-tiny as deepseek_v3", kimi_as_deepseek),
    ("gpt_oss", "gptoss-tiny", stored("tests", "data", "gptoss", "gptoss-tiny")),
    ("gemma3_text", "gemma3-text-tiny", stored("tests", "data", "gemma3", "gemma3-text-tiny")),
    ("gemma3", "gemma3-vlm-tiny", stored("tests", "data", "gemma3", "gemma3-vlm-tiny")),
    ("phi3", "tiny-random", stored("tests", "data", "phi3", "tiny-random")),
    ("phi3", "tiny-random-longrope", stored("tests", "data", "phi3", "tiny-random-longrope")),
    ("qwen2_5_vl", "qwen2_5-vl-tiny", stored("tests", "data", "vlm", "qwen2_5-vl-tiny")),
    ("qwen2_5_vl", "qwen2_5-vl-old-tiny", stored("tests", "data", "vlm", "qwen2_5-vl-old-tiny")),
    ("qwen3_vl", "qwen3-vl-tiny", stored("tests", "data", "vlm", "qwen3-vl-tiny")),
    ("mistral3", "mistral3-tiny", stored("tests", "data", "vlm", "mistral3-tiny")),
    ("mistral3", "mistral3-old-tiny", stored("tests", "data", "vlm", "mistral3-old-tiny")),
    ("llama4_text", "llama4-tiny", stored("tests", "data", "moe", "llama4-tiny")),
    # One tensor per expert, as QuantScope's exports write them: whether transformers' fused Llama4TextExperts
    # loads them (else: not checked, its error says so).
    ("llama4_text", "llama4-tiny-per-expert", stored("tests", "data", "moe", "llama4-tiny-per-expert")),
    ("llama4", "llama4-vlm-tiny", stored("tests", "data", "moe", "llama4-vlm-tiny")),
    ("glm4_moe", "glm4-moe-tiny", stored("tests", "data", "moe", "glm4-moe-tiny")),
    # transformers 5's fused experts (mlp.experts.gate_up_proj / down_proj), which transformers 4 does not load
    ("glm4_moe", "glm4-moe-tiny-fused", stored("tests", "data", "moe", "glm4-moe-tiny-fused")),
    ("qwen3_moe", "qwen3-moe-tiny-fused", stored("tests", "data", "moe", "qwen3-moe-tiny-fused")),
    ("qwen3_5_text", "qwen35-tiny", stored("tests", "data", "qwen35", "qwen35-tiny")),
    ("qwen3_5", "qwen35-vl-tiny", stored("tests", "data", "qwen35", "qwen35-vl-tiny")),
    ("qwen3_5_moe_text", "qwen35-moe-tiny", stored("tests", "data", "qwen35", "qwen35-moe-tiny")),
]


def token_ids(folder, limit):
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    text = config.get("text_config", config)
    positions = min(limit, int(text.get("max_position_embeddings", limit)))
    with open(tree("resources", "text", "the-verdict.txt"), "rb") as f:
        data = f.read()
    return list(data[:positions])


# --- the two sides ------------------------------------------------------------------------------


def ours(cli, folder, ids, device, work):
    out = os.path.join(work, "logits-%s-%d.json" % (device, os.getpid()))
    run = subprocess.run([cli, "logits", folder, "--ids", ",".join(map(str, ids)), "--device", device, "--json", out],
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError((run.stderr.strip().splitlines() or ["exit %d" % run.returncode])[-1])
    with open(out) as f:
        report = json.load(f)
    os.remove(out)
    return report["logits"]


def reference_support():
    """(torch, transformers) or the reason they cannot be used."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # the table, not every loader's warnings
    try:
        import torch
        import transformers
        import safetensors  # noqa: F401  (transformers reads the checkpoints through it)
    except ImportError as e:
        return None, "no %s here" % e.name
    return (torch, transformers), ""


def known_model_type(model_type):
    """Whether this transformers has the model type (where it cannot say, loading will tell)."""
    try:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    except ImportError:
        return True
    return model_type in CONFIG_MAPPING


def load_reference(torch, transformers, folder):
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    architectures = config.get("architectures") or []
    cls = getattr(transformers, architectures[0], None) if architectures else None
    cls = cls or transformers.AutoModelForCausalLM
    kwargs = {"attn_implementation": "eager", "output_loading_info": True, "ignore_mismatched_sizes": True}
    try:
        loaded = cls.from_pretrained(folder, dtype=torch.float32, **kwargs)
    except TypeError:  # transformers before `dtype` replaced `torch_dtype`
        loaded = cls.from_pretrained(folder, torch_dtype=torch.float32, **kwargs)
    model, info = loaded if isinstance(loaded, tuple) else (loaded, {})

    def keys(name):  # a dict of lists in transformers 4; read as attributes too, should that change
        value = info.get(name) if isinstance(info, dict) else getattr(info, name, None)
        return [k if isinstance(k, str) else k[0] for k in (value or [])]  # mismatched: (name, shapes...)

    text_problems = [k for k in keys("missing_keys") + keys("mismatched_keys") if not VISION_NAMES.search(k)]
    if text_problems:
        raise RuntimeError("transformers left %d weights of the text model unloaded: %s" %
                           (len(text_problems), ", ".join(map(str, text_problems[:4]))))
    return model.eval()


def reference_logits(torch, transformers, folder, ids):
    """transformers' logits in float64 (float32 when the model will not run in float64), and the dtype."""
    model = load_reference(torch, transformers, folder)
    inputs = torch.tensor([ids], dtype=torch.long)
    for dtype in (torch.float64, torch.float32):
        try:
            with torch.no_grad():
                logits = model.to(dtype)(input_ids=inputs, attention_mask=torch.ones_like(inputs),
                                         use_cache=False).logits[0]
            return logits.to(torch.float64), str(dtype).replace("torch.", "")
        except RuntimeError:
            if dtype == torch.float32:
                raise
    raise AssertionError("unreachable")


def compare(torch, ref, our_rows):
    our = torch.tensor(our_rows, dtype=torch.float64)
    if our.shape != ref.shape:
        raise RuntimeError("our logits are %s, transformers' %s" % (tuple(our.shape), tuple(ref.shape)))
    log_p = torch.log_softmax(ref, dim=-1)
    log_q = torch.log_softmax(our, dim=-1)
    kl = (log_p.exp() * (log_p - log_q)).sum(dim=-1)
    same = int((ref.argmax(dim=-1) == our.argmax(dim=-1)).sum())
    return {"mean_kl": float(kl.mean()), "max_kl": float(kl.max()), "same_top": same, "positions": ref.shape[0],
            "max_abs_logit_diff": float((ref - our).abs().max()), "reference_logit_std": float(ref.std())}


def verdict(m):
    return "PASS" if m["mean_kl"] < MAX_MEAN_KL and m["same_top"] >= MIN_SAME_TOP * m["positions"] else "FAIL"


# --- the table ----------------------------------------------------------------------------------


def table(rows):
    """The rows as a text table; the comparison's columns only where there was something to compare with."""
    compared = any(r.get("metrics") for r in rows)
    heads = ["family", "checkpoint", "pos", "device"]
    heads += ["reference", "mean KL", "max KL", "same top", "max |dlogit|", "logit std"] if compared else []
    heads += ["result"]
    cells = []
    for r in rows:
        row = [r["family"], r["checkpoint"], str(r.get("positions", "")), r.get("device", "")]
        if compared:
            m = r.get("metrics")
            row += [r.get("reference", "")] + (["%.2e" % m["mean_kl"], "%.2e" % m["max_kl"],
                                                "%d/%d" % (m["same_top"], m["positions"]),
                                                "%.2e" % m["max_abs_logit_diff"], "%.2f" % m["reference_logit_std"]]
                                               if m else [""] * 5)
        cells.append(row + [r["result"]])
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(heads)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(heads, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    notes = ["%s (%s, %s): %s" % (r["result"], r["family"], r["checkpoint"], r["note"]) for r in rows if r.get("note")]
    return "\n".join(lines + ([""] + notes if notes else []))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cli", required=True, help="quantscope-cli")
    parser.add_argument("--make-checkpoint", required=True, help="make_checkpoint (bench/model)")
    parser.add_argument("--devices", default="cpu", help="where our forward pass runs: cpu, cuda or both (cpu,cuda)")
    parser.add_argument("--positions", type=int, default=300, help="ids per checkpoint, at most")
    parser.add_argument("--json", help="write every row as JSON here")
    parser.add_argument("--only", default="", help="only the checkpoints whose family or name this regex finds")
    parser.add_argument("--work", help="folder for the checkpoints made here (default: a temporary one)")
    args = parser.parse_args()
    devices = [d for d in args.devices.split(",") if d]
    if not devices or any(d not in ("cpu", "cuda") for d in devices):
        parser.error("--devices takes cpu, cuda or cpu,cuda")

    work = args.work or tempfile.mkdtemp(prefix="qs_transformers_kl_")
    os.makedirs(work, exist_ok=True)
    support, why_not = reference_support()
    if support:
        torch, transformers = support
        torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
        print("reference: transformers %s, torch %s, on the CPU" % (transformers.__version__, torch.__version__))
    else:
        print("reference: none (%s): only our side runs" % why_not)

    rows, start = [], time.time()
    for family, name, make in CHECKPOINTS:
        if args.only and not re.search(args.only, family + " " + name):
            continue
        row = {"family": family, "checkpoint": name}
        try:
            folder = make(work, args.make_checkpoint)
            ids = token_ids(folder, args.positions)
        except Exception as e:  # noqa: BLE001  (a checkpoint we could not make is our failure)
            rows.append(dict(row, result="ERROR", note="could not prepare it: %s" % e))
            continue
        row["positions"] = len(ids)
        if support and not known_model_type(family):
            rows.append(dict(row, result="SKIP", note="transformers %s does not know model_type %s" %
                             (transformers.__version__, family)))
            continue
        ref, ref_note = None, ""
        if support:
            try:
                ref, row["reference"] = reference_logits(torch, transformers, folder, ids)
            except Exception as e:  # noqa: BLE001  (transformers' failure: reported, not ours)
                ref_note = "transformers could not run it: %s" % (str(e).splitlines() or [type(e).__name__])[0][:300]
        for device in devices:
            drow = dict(row, device=device)
            try:
                logits = ours(args.cli, folder, ids, device, work)
            except Exception as e:  # noqa: BLE001
                rows.append(dict(drow, result="ERROR", note="quantscope-cli logits: %s" % e))
                continue
            if not all(math.isfinite(x) for r in logits for x in r):
                rows.append(dict(drow, result="ERROR", note="our logits are not all finite"))
            elif ref is None:  # our logits are there and finite; nothing to compare them with
                rows.append(dict(drow, result="NOT CHECKED", note=ref_note) if support else
                            dict(drow, result="OURS ONLY"))
            else:
                metrics = compare(torch, ref, logits)
                rows.append(dict(drow, metrics=metrics, result=verdict(metrics)))

    print(table(rows))
    counts = {}
    for r in rows:
        counts[r["result"]] = counts.get(r["result"], 0) + 1
    failed = counts.get("FAIL", 0) + counts.get("ERROR", 0)
    print("\ntransformers KL: %s in %.0f s" % (", ".join("%d %s" % (n, k) for k, n in sorted(counts.items())),
                                              time.time() - start))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"max_mean_kl": MAX_MEAN_KL, "min_same_top": MIN_SAME_TOP, "rows": rows}, f, indent=1)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
