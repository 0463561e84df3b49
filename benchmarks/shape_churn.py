"""Greedy generation with a Hugging Face Llama (random weights, a config in
code) in fused eager with shape churn handling on and off
(TORCH_TPU_FUSED_SHAPE_CHURN, docs/eager_modes.md "Shape churn"), strict
eager beside them, in one run: each row a fresh process with an empty
compile cache, timing four generate calls: three of the same length (the
first compiles; the later ones show what is left to compile) and one 8
tokens longer (new lengths only). Seconds and programs compiled per call.

    .venv/bin/python benchmarks/shape_churn.py [--new-tokens 24]

Transformers' growing ("dynamic") KV cache changes the attention's shapes
at every token; with its fixed-shape ("static") one and its own compile of
the decode step turned off, only the ops that read the growing ids and mask
do. BENCHMARKS.md records the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

CHILD = textwrap.dedent("""
    import json, sys, time
    import torch, transformers, torch_tpu
    mode, cache, new_tokens = sys.argv[1], sys.argv[2], int(sys.argv[3])
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=1000, hidden_size=256, intermediate_size=512,
                                      num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
                                      max_position_embeddings=256)
    model = transformers.LlamaForCausalLM(config).eval().to("tpu")
    prompt = torch.randint(0, 1000, (1, 16), generator=torch.Generator().manual_seed(1)).to("tpu")
    kwargs = {} if cache == "dynamic" else dict(cache_implementation="static", disable_compile=True)
    torch_tpu.set_eager_mode(mode)
    calls, tokens = [], []
    for n in (new_tokens, new_tokens, new_tokens, new_tokens + 8):
        compiles = torch_tpu.runtime.cache_stats()["compiles"]
        start = time.perf_counter()
        with torch.no_grad():
            out = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=n,
                                 do_sample=False, pad_token_id=0, **kwargs)
        tokens.append(out.cpu()[0, :16 + new_tokens].tolist())
        calls.append((time.perf_counter() - start, torch_tpu.runtime.cache_stats()["compiles"] - compiles))
    torch_tpu.set_eager_mode("strict")
    print(json.dumps({"calls": calls, "same_tokens": all(t == tokens[0] for t in tokens),
                      "ops_alone": torch_tpu.fused_stats()["shape_churn_ops"]}))
""")


def run(mode: str, cache: str, churn: str | None, new_tokens: int) -> dict:
    env = dict(os.environ, TORCH_TPU_DISK_CACHE="0")
    env.pop("TORCH_TPU_FUSED_SHAPE_CHURN", None)
    if churn is not None:
        env["TORCH_TPU_FUSED_SHAPE_CHURN"] = churn
    proc = subprocess.run([sys.executable, "-c", CHILD, mode, cache, str(new_tokens)], capture_output=True,
                          text=True, env=env, cwd=tempfile.gettempdir(), timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new-tokens", type=int, default=24)
    parser.add_argument("--caches", nargs="+", default=["dynamic", "static"], choices=["dynamic", "static"])
    args = parser.parse_args()
    print(f"Llama 4 x 256, prompt 16, calls of {args.new_tokens} x 3 then {args.new_tokens + 8} new tokens, greedy")
    print(f"{'cache':<8} {'row':<22} {'call 1':>13} {'call 2':>13} {'call 3':>13} {'longer':>13} "
          f"{'call 1 vs off':>13} {'ops alone':>9}")
    for cache in args.caches:
        rows = [("strict", "strict", None), ("fused, churn off", "fused", "0"), ("fused", "fused", None)]
        results = {name: run(mode, cache, churn, args.new_tokens) for name, mode, churn in rows}
        off = results["fused, churn off"]["calls"][0][0]
        for name, result in results.items():
            cells = " ".join(f"{f'{s:.2f}s/{c}':>13}" for s, c in result["calls"])
            same = "" if result["same_tokens"] else "  (tokens differ between calls!)"
            print(f"{cache:<8} {name:<22} {cells} {off / result['calls'][0][0]:>12.2f}x {result['ops_alone']:>9}{same}")
    print("cells: seconds / programs compiled in the call; each row a fresh process, empty compile cache")


if __name__ == "__main__":
    main()
