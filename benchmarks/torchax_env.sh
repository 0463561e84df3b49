#!/usr/bin/env bash
# Creates the virtual environment benchmarks/torchax_step.py runs in:
# torchax (PyTorch on JAX) with JAX on XLA's CPU compiler, beside the CPU
# build of the same torch as the project's. A separate environment because
# torchax pins its own jax; the project's environment stays untouched.
#
#   bash benchmarks/torchax_env.sh [VENV]
#
# VENV defaults to $TORCH_TPU_TORCHAX_VENV, else
# ~/.cache/torch-tpu/torchax-venv (the path benchmarks/modes.py looks at).
set -euo pipefail

venv="${1:-${TORCH_TPU_TORCHAX_VENV:-$HOME/.cache/torch-tpu/torchax-venv}}"
python="${PYTHON:-python3}"

"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --quiet)
"${pip[@]}" --upgrade pip
# The CPU build of torch first (pip prefers 2.13.0+cpu where a local wheel
# offers it), checked to be one: torchax's dependency on torch must not pull
# a CUDA build, so the rest installs with torch held at what is there.
"${pip[@]}" torch==2.13.0
"$venv/bin/python" -c "import sys, torch; sys.exit('torch in $venv is a CUDA build' if torch.version.cuda else 0)"
constraints="$venv/torch-constraint.txt"
"$venv/bin/python" -c "import torch; print('torch==' + torch.__version__)" > "$constraints"
# jax 0.10.2 is the newest release for Python 3.11, the Python of the torch
# 2.13.0 CPU wheel (jax 0.11 and later require Python 3.12).
"${pip[@]}" -c "$constraints" "jax[cpu]==0.10.2" "jaxlib==0.10.2" torchax==0.0.13
# Versions only: importing torchax 0.0.13 under torch 2.13 needs the
# stand-ins torchax_step.py sets up first.
"$venv/bin/python" -c "import importlib.metadata as m; print(*(p + ' ' + m.version(p) for p in ('torch', 'jax', 'jaxlib', 'torchax')), sep=', ')"
echo "torchax environment ready: $venv/bin/python"
