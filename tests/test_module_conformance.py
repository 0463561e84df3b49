"""PyTorch's own module and optimizer test inputs against CPU
(tests/module_conformance.py, tests/optimizer_conformance.py): a
representative subset of module_db in float32, a sample of test_nn.py's
older module catalog, and every optimizer in optim_db in every
implementation.

TORCH_TPU_MODULES=all runs every module in module_db, and every test of
test_nn.py's older catalog (tests/nn_tests_conformance.py) where CI runs
every fourth, instead.
"""

from __future__ import annotations

import os

import pytest
import torch

import module_conformance
import nn_tests_conformance
import optimizer_conformance

# One or two modules of every family, as named in module_db.
CI_MODULES = [
    "nn.Conv2d", "nn.ConvTranspose2d", "nn.LazyConv2d", "nn.Linear", "nn.Bilinear", "nn.Embedding",
    "nn.BatchNorm2d", "nn.GroupNorm", "nn.InstanceNorm2d", "nn.LayerNorm", "nn.RMSNorm", "nn.LocalResponseNorm",
    "nn.MaxPool2d", "nn.AvgPool2d", "nn.AdaptiveMaxPool2d", "nn.LPPool2d", "nn.FractionalMaxPool2d",
    "nn.NLLLoss", "nn.MultiMarginLoss", "nn.CTCLoss", "nn.GaussianNLLLoss", "nn.KLDivLoss",
    "nn.MultiheadAttention", "nn.GRUCell",
    "nn.PReLU", "nn.GELU", "nn.GLU", "nn.Softmax2d", "nn.ReflectionPad2d", "nn.CircularPad2d",
]

RUN_ALL = os.environ.get("TORCH_TPU_MODULES") == "all"


def test_ci_modules_exist_in_module_db():
    known = {m.name for m in module_conformance.select_modules()}
    assert not [n for n in CI_MODULES if n not in known]


@pytest.mark.parametrize("module_info", module_conformance.select_modules(None if RUN_ALL else CI_MODULES),
                         ids=module_conformance.full_name)
def test_module_float32(module_info):
    result = module_conformance.run_module(module_info, torch.float32)
    assert result.status == "pass", f"{result.name}: {result.passed}/{result.samples} inputs " \
        f"pass; first failures: {result.errors}"


@pytest.mark.parametrize("optim_info", optimizer_conformance.select_optimizers(), ids=optimizer_conformance.full_name)
def test_optimizer_float32(optim_info):
    result = optimizer_conformance.run_optimizer(optim_info, torch.float32)
    assert result.status == "pass", f"{result.name}: {result.passed}/{result.samples} configurations pass; " \
        f"first failures: {result.errors}"


# A few modules under torch.compile(backend="tpu"): the compiled forward
# and backward graphs. (Compiled optimizer steps: tests/test_compile.py
# and `optimizer_conformance.py --compile`.)
COMPILED_MODULES = ["nn.Conv2d", "nn.BatchNorm2d", "nn.LayerNorm", "nn.GRUCell"]


@pytest.mark.parametrize("module_info", module_conformance.select_modules(COMPILED_MODULES),
                         ids=module_conformance.full_name)
def test_module_compiled(module_info):
    result = module_conformance.run_module(module_info, torch.float32, compiled=True)
    assert result.status == "pass", f"{result.name}: {result.passed}/{result.samples} inputs pass; " \
        f"first failures: {result.errors}"


NN_TESTS = nn_tests_conformance.select_tests()


@pytest.mark.parametrize("case", NN_TESTS if RUN_ALL else NN_TESTS[::4], ids=lambda case: case[0].name)
def test_nn_catalog(case):
    result = nn_tests_conformance.run_test(case)
    assert result.status == "pass", f"{result.name}: {result.passed}/{result.samples} inputs pass; " \
        f"first failures: {result.errors}"

