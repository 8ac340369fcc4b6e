#!/usr/bin/env python3
"""A catalogue of hostile checkpoints, run through the CLI as a hostile user would (issue 21).

Each valid export in fuzz/corpus/checkpoint_folder (written by the project's encoders; see
fuzz/make_seeds.cpp) is mutated: every tensor removed in turn, every tensor's dtype swapped for
another of the same width, a NaN and an Inf written into every float tensor, every integer of the
quantization config pushed past 32 bits or made fractional, quant_method removed or replaced, the
config nested 100,000 deep, config.json made a FIFO, the header emptied. Every mutant runs through
`inspect --json`, `inspect --stats` and `dequantize`, and every outcome is classified:

  ok        exit 0
  refused   exit 2 with exactly one line on stderr and, for dequantize, nothing written
  BAD       anything else: a signal, a hang (60 s), another exit code, more than one line,
            a dequantize that wrote a destination while failing, or exit 0 where the class
            must be refused (a config that is not guessed over, a promised tensor missing, a
            non-finite weight decoded by dequantize, an empty checkpoint)

  scripts/hostile-catalogue.py [--cli build/app/cli/quantscope-cli] [--keep DIR]
Exits 1 when any outcome is BAD.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

MARKER = b"\n--8<--\n"
SAME_WIDTH = {1: ["U8", "I8", "F8_E4M3", "F8_E5M2"], 2: ["F16", "BF16", "I16", "U16"], 4: ["F32", "I32", "U32"],
              8: ["F64", "I64", "U64"]}
WIDTH = {d: w for w, ds in SAME_WIDTH.items() for d in ds}
NAN = {"F32": struct.pack("<f", float("nan")), "F16": b"\x00\x7e", "BF16": b"\xc0\x7f", "F8_E4M3": b"\x7f"}
INF = {"F32": struct.pack("<f", float("inf")), "F16": b"\x00\x7c", "BF16": b"\x80\x7f"}
# Config integers some codec reads: pushed past 32 bits or made fractional, they must be refused.
READ_KEYS = {"bits", "w_bit", "group_size", "q_group_size", "num_bits", "weight_block_size", "block_structure", "format_version"}


class Folder:
    def __init__(self, seed):
        s = open(seed, "rb").read().split(MARKER)
        self.config = json.loads(s[0]) if s[0] else None
        self.side = None
        if len(s) > 1 and b"\n" in s[1]:
            name, content = s[1].split(b"\n", 1)
            self.side = (name.decode(), json.loads(content))
        header = json.loads(s[2])
        data = s[3] if len(s) > 3 else b""
        self.tensors = []   # [name, dtype, shape, bytes]
        for name, e in header.items():
            if name == "__metadata__":
                continue
            b, end = e["data_offsets"]
            self.tensors.append([name, e["dtype"], e["shape"], bytearray(data[b:end])])
        self.raw_header = None
        self.fifo = None

    def copy(self):
        f = Folder.__new__(Folder)
        f.config = json.loads(json.dumps(self.config))
        f.side = json.loads(json.dumps(self.side)) if self.side else None
        f.tensors = [[n, d, list(s), bytearray(b)] for n, d, s, b in self.tensors]
        f.raw_header, f.fifo = self.raw_header, self.fifo
        return f

    def write(self, path):
        os.makedirs(path)
        if self.config is not None and self.fifo != "config.json":
            with open(os.path.join(path, "config.json"), "w") as out:
                out.write(self.config if isinstance(self.config, str) else json.dumps(self.config))
        if self.side:
            json.dump(self.side[1], open(os.path.join(path, self.side[0]), "w"))
        header, data = {}, b""
        for name, dtype, shape, b in self.tensors:
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(b)]}
            data += bytes(b)
        text = (self.raw_header or json.dumps(header)).encode()
        with open(os.path.join(path, "model.safetensors"), "wb") as out:
            out.write(struct.pack("<Q", len(text)) + text + (b"" if self.raw_header else data))
        if self.fifo:
            os.mkfifo(os.path.join(path, self.fifo))


def integer_paths(value, path=()):
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield path
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from integer_paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from integer_paths(v, path + (i,))


def set_path(root, path, value):
    for p in path[:-1]:
        root = root[p]
    root[path[-1]] = value


def get_path(root, path):
    for p in path:
        root = root[p]
    return root


def mutants(seed_name, base):
    """(class, must_refuse, description, folder)"""
    for i, t in enumerate(base.tensors):
        if len(base.tensors) > 1:
            f = base.copy()
            del f.tensors[i]
            yield "missing tensor", False, f"without {t[0]}", f
        for other in SAME_WIDTH.get(WIDTH.get(t[1], 0), []):
            if other != t[1]:
                f = base.copy()
                f.tensors[i][1] = other
                yield "dtype swap", False, f"{t[0]} {t[1]} -> {other}", f
        for kind, table in (("nan", NAN), ("inf", INF)):
            if t[1] in table and len(t[3]) >= len(table[t[1]]):
                f = base.copy()
                w = table[t[1]]
                f.tensors[i][3][0:len(w)] = w
                # Linears must not decode to NaN/Inf; embeddings and norms are copied as they are, and a
                # lookup table's first entry may be used by no code.
                decoded = not (t[0].endswith("quant_map") or "embed_tokens" in t[0] or "norm" in t[0])
                yield "non-finite", decoded, f"{kind} in {t[0]}", f
    q = (base.config or {}).get("quantization_config")
    if q is not None:
        for path in integer_paths(q):
            v = get_path(q, path)
            for new, label in ((v + 2**32, "+2^32"), (v + 0.5, "+0.5")):
                f = base.copy()
                set_path(f.config["quantization_config"], path, new)
                # Activation args are not read (weights only), nor ModelOpt's num_bits (its quant_algo
                # says it), nor the trellis config's sizes (its header tensor holds them).
                read = (any(p in READ_KEYS for p in path if isinstance(p, str)) and "input_activations" not in path
                        and q.get("quant_method") not in ("modelopt", "quantscope-trellis"))
                yield "integer", read, f"quantization_config{list(path)} {label}", f
        for method in (None, "", 42) + tuple(m for m in ("gptq", "awq", "fp8", "compressed-tensors", "modelopt", "bitsandbytes",
                                                           "mxfp4", "quantscope-trellis") if m != q.get("quant_method")):
            f = base.copy()
            if method is None:
                del f.config["quantization_config"]["quant_method"]
            else:
                f.config["quantization_config"]["quant_method"] = method
            # Another format's name may describe the same layout (compressed-tensors FP8 is FP8); a
            # missing or malformed one must be refused.
            # bitsandbytes configs from before quant_method name it with load_in_4bit/8bit.
            named = q.get("load_in_4bit") or q.get("load_in_8bit")
            yield "quant_method", method in (None, "", 42) and not named, f"quant_method {method!r}", f
    f = base.copy()
    f.config = json.dumps(base.config or {})[:-1] + ', "extra": ' + "[" * 100000 + "]" * 100000 + "}"
    yield "deep nesting", True, "config nested 100000 deep", f
    f = base.copy()
    f.fifo = "config.json"
    yield "fifo", True, "config.json is a FIFO", f
    f = base.copy()
    f.raw_header = "{}"
    yield "empty", True, "header {}", f


def run(cli, args, timeout=60):
    try:
        p = subprocess.run([cli] + args, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "hang", ""
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode < 0:
        return f"signal {-p.returncode}", err
    if p.returncode == 0:
        return "ok", err
    if p.returncode == 2 and err.count("\n") == 1 and err.startswith("quantscope-cli: error: ") and not p.stdout:
        return "refused", err
    return f"exit {p.returncode}, {err.count(chr(10))} lines", err


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(root, "build/app/cli/quantscope-cli"))
    ap.add_argument("--seeds", default=os.path.join(root, "fuzz/corpus/checkpoint_folder"))
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="qs_catalogue_")
    counts, bad, total_mutants = {}, [], 0
    try:
        for seed in sorted(os.listdir(args.seeds)):
            if seed.startswith("issue21"):
                continue   # already hostile
            base = Folder(os.path.join(args.seeds, seed))
            for cls, must_refuse, what, folder in mutants(seed, base):
                total_mutants += 1
                path = os.path.join(work, f"m{total_mutants}")
                folder.write(path)
                out = os.path.join(work, f"out{total_mutants}")
                for command in (["inspect", path, "--json"], ["inspect", path, "--stats"], ["dequantize", path, "--out", out]):
                    outcome, err = run(args.cli, command)
                    name = command[0] + (" " + command[2] if command[0] == "inspect" else "")
                    wrote = command[0] == "dequantize" and outcome != "ok" and os.path.exists(out)
                    refuse_here = must_refuse and (command[0] == "dequantize" or cls in ("deep nesting", "fifo", "empty"))
                    verdict = outcome
                    if outcome not in ("ok", "refused") or wrote or (refuse_here and outcome == "ok"):
                        verdict = "BAD"
                        bad.append(f"{seed}: {what}: {name}: {outcome}{' (wrote output)' if wrote else ''}: {err.strip()[:200]}")
                    key = (cls, verdict if verdict == "BAD" else outcome)
                    counts[key] = counts.get(key, 0) + 1
                shutil.rmtree(path, ignore_errors=True)
                shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    runs = sum(counts.values())
    print(f"{total_mutants} mutants of {len([s for s in os.listdir(args.seeds) if not s.startswith('issue21')])} exports, {runs} runs")
    for cls in sorted({c for c, _ in counts}):
        parts = ", ".join(f"{v} {o}" for (c, o), v in sorted(counts.items()) if c == cls)
        print(f"  {cls:15} {parts}")
    for line in bad:
        print("BAD", line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
