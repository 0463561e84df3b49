"""Qwen3 from Hugging Face Transformers on the tpu: a small random-weight
Qwen3ForCausalLM (grouped-query attention with per-head q / k RMSNorm,
rotary embeddings, SwiGLU, tied embeddings) built from a config in code,
trained briefly, then greedy generation with a static KV cache.

Nothing is downloaded: the config is written here and the weights are
random. Needs `transformers` (installed by `bash dev.sh example` or `bash dev.sh test`).

    python examples/qwen.py [--device tpu] [--steps 20] [--compare-cpu]
"""

from __future__ import annotations

import torch

try:
    from examples import common
    from examples.llama import LlamaConfig, sequences
except ImportError:  # run as a script from examples/
    import common
    from llama import LlamaConfig, sequences


def qwen3_config(vocab_size: int = 64):
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
        tie_word_embeddings=True, attn_implementation="sdpa",
    )


def make_step(device: str, batch: int = 8, seq: int = 24, seed: int = 0, backend: str | None = None):
    """One AdamW training step per call on `device` (the model's own
    shifted cross-entropy loss); with `backend`, under torch.compile."""
    from transformers import Qwen3ForCausalLM

    cfg = qwen3_config()
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(cfg).to(device)
    forward = torch.compile(model, backend=backend) if backend else model
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    # The Llama example's arithmetic-progression sequences: learnable.
    data = sequences(LlamaConfig(vocab_size=cfg.vocab_size), 256, seq)

    def step(i: int) -> torch.Tensor:
        j = (i * batch) % len(data)
        tokens = data[j:j + batch].to(device)
        loss = forward(input_ids=tokens, labels=tokens).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step, model


def generate(model, prompt: torch.Tensor, new_tokens: int) -> torch.Tensor:
    """Greedy tokens after `prompt`, with Transformers' static cache (one
    shape for every decoding step, so no step compiles new programs)."""
    with torch.no_grad():
        return model.generate(prompt, max_new_tokens=new_tokens, do_sample=False,
                              cache_implementation="static", pad_token_id=0)[:, prompt.shape[1]:]


def main() -> None:
    args, model = common.run_example("Qwen3", __doc__, make_step, steps=20)
    prompt = sequences(LlamaConfig(vocab_size=model.config.vocab_size), 2, 6, seed=1)
    print("greedy generation from", prompt.tolist())
    print("  ->", generate(model.eval(), prompt.to(args.device), 8).tolist())


if __name__ == "__main__":
    main()
