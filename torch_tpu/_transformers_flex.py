"""transformers' ``attn_implementation="flex_attention"`` runs on tpu.

transformers turned FlexAttention off in any process whose accelerator is
tpu (``is_torch_flex_attn_available``: "torch's flex_attention refuses TPU
tensors", which was true until torch_tpu let them through,
``torch_tpu/_flex_attention.py``), so such models raised "PyTorch Flex
Attention is not supported on TPU". And its attention function compiles
``flex_attention`` once per process with ``torch.compile``'s default
backend, inductor, which has no tpu code generation.

With tpu the accelerator, the availability check now answers as it does
for CUDA, and that compile uses ``backend="tpu"``; FlexAttention's block
masks, which transformers asks to be compiled, are made eagerly on tpu
(as ``create_block_mask(_compile=True)`` always is there).
"""

from __future__ import annotations

import torch

from torch_tpu import _after_import
from torch_tpu._accelerate import tpu_is_the_accelerator


def _flex_available(original):
    from transformers.utils.import_utils import is_torch_available

    return original() or (is_torch_available() and tpu_is_the_accelerator())


def _patch_availability(import_utils) -> None:
    _after_import.wrap(import_utils, "is_torch_flex_attn_available", _flex_available, copies=True)


def _compile_on_tpu(original, self, training):
    recompiles = not self._is_flex_compiled or training != getattr(self, "training", None)
    original(self, training)
    if recompiles and tpu_is_the_accelerator():
        from torch.nn.attention.flex_attention import flex_attention

        self._compiled_flex_attention = torch.compile(flex_attention, backend="tpu")


def _patch_compile(flex) -> None:
    if hasattr(flex, "WrappedFlexAttention"):
        _after_import.wrap(flex.WrappedFlexAttention, "__init__", _compile_on_tpu)


def install() -> None:
    _after_import.when_imported("transformers.utils.import_utils", _patch_availability)
    _after_import.when_imported("transformers.integrations.flex_attention", _patch_compile)
