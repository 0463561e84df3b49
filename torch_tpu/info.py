"""`python -m torch_tpu.info`: what torch_tpu runs on."""

from __future__ import annotations

import sys


def main() -> int:
    import torch_tpu.runtime as runtime
    try:
        facts = runtime.info()
    except (RuntimeError, ValueError) as e:
        # A missing, broken or unsupported plugin: one clear line.
        print(f"torch_tpu: {e}", file=sys.stderr)
        return 1
    width = max(len(k) for k in facts)
    for key, value in facts.items():
        print(f"{key:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
