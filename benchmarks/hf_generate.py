"""Greedy generation with a Hugging Face Llama (random weights, a config in
code) on tpu beside PyTorch's CPU, in one run: seconds for the first call
(which compiles) and the median of the next calls, strict and fused eager,
with Transformers' growing ("dynamic") KV cache and its fixed-shape
("static") one, and the ratio to CPU.

    .venv/bin/python benchmarks/hf_generate.py [--new-tokens 32] [--repeats 3]

Every new sequence length is a new shape, so the dynamic cache compiles
programs for each length the first time it meets it; the static cache keeps
one shape. BENCHMARKS.md records the figures.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import transformers

import torch_tpu


def generate_seconds(model, ids, new_tokens: int, cache: str | None) -> float:
    kwargs = {} if cache is None else dict(cache_implementation=cache)
    start = time.perf_counter()
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens, do_sample=False,
                         pad_token_id=0, **kwargs)
    out.cpu()  # the tokens on the host: the generation has finished
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                                      num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=256)
    cpu = transformers.LlamaForCausalLM(config).eval()
    tpu = transformers.LlamaForCausalLM(config).eval()
    tpu.load_state_dict(cpu.state_dict())
    tpu.to("tpu")
    prompt = torch.randint(0, config.vocab_size, (1, 16), generator=torch.Generator().manual_seed(1))
    rows = []
    with torch.no_grad():
        generate_seconds(cpu, prompt, args.new_tokens, None)
        cpu_s = statistics.median(generate_seconds(cpu, prompt, args.new_tokens, None) for _ in range(args.repeats))
        rows.append(("cpu eager", "dynamic", float("nan"), cpu_s))
        for mode in ("strict", "fused"):
            with torch_tpu.eager_mode(mode):
                for cache in (None, "static"):
                    first = generate_seconds(tpu, prompt.to("tpu"), args.new_tokens, cache)
                    steady = statistics.median(generate_seconds(tpu, prompt.to("tpu"), args.new_tokens, cache)
                                               for _ in range(args.repeats))
                    rows.append((mode, cache or "dynamic", first, steady))
    print(f"Llama 4 x 256, prompt 16, {args.new_tokens} new tokens, greedy")
    print(f"{'mode':<10} {'cache':<8} {'first s':>8} {'steady s':>9} {'vs cpu':>7}")
    for mode, cache, first, steady in rows:
        print(f"{mode:<10} {cache:<8} {first:>8.2f} {steady:>9.3f} {cpu_s / steady:>6.2f}x")


if __name__ == "__main__":
    main()
