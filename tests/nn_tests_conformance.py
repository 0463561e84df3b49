"""Conformance on the older catalog of module tests that PyTorch's
test_nn.py runs (torch.testing._internal.common_nn: `module_tests`,
`get_new_module_tests()`, `criterion_tests`): about 280 more module and
loss configurations (convolutions with groups, dilation and padding modes,
Fold / Unfold, PixelShuffle, Upsample, EmbeddingBag, PairwiseDistance,
losses without reduction, ...). Each becomes a one-input module case of
tests/module_conformance.py and is checked the same way: outputs,
buffers, the gradients of the inputs and of every parameter, against CPU,
in each test's own default dtype.

    python tests/nn_tests_conformance.py --report nn_tests.json
"""

from __future__ import annotations

import argparse
import sys
import types

import torch

import module_conformance
from conformance_common import run_all

# Modules whose outputs are random in training mode: shapes and dtypes only.
RANDOM_CONSTRUCTORS = {"RReLU", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                       "FeatureAlphaDropout"}


def _float_leaves_require_grad(value):
    if isinstance(value, torch.Tensor):
        value = value.detach()
        return value.requires_grad_() if value.is_floating_point() or value.is_complex() else value
    if isinstance(value, (tuple, list)):
        return type(value)(_float_leaves_require_grad(v) for v in value)
    return value


def _as_tuple(value):
    return value if isinstance(value, tuple) else (value,)


def _case(params, criterion):
    """A ModuleInfo-like record with one ModuleInput, made the way
    test_nn.py makes its NewModuleTest / CriterionTest objects."""
    from torch.testing._internal import common_nn
    from torch.testing._internal.common_modules import FunctionInput, ModuleInput

    params = dict(params)
    if "constructor" not in params:
        params["constructor"] = getattr(torch.nn, params.pop("module_name"))
    params.pop("decorator", None)
    test = (common_nn.CriterionTest if criterion else common_nn.NewModuleTest)(**params)
    name = test.get_name().removeprefix("test_")
    with common_nn.set_default_dtype(getattr(test, "default_dtype", None) or torch.float64):
        forward = _as_tuple(_float_leaves_require_grad(test._get_input()))
        if criterion:
            forward = forward + (test._get_target(),) + tuple(test.extra_args)
        dtype = torch.get_default_dtype()
    module_input = ModuleInput(constructor_input=FunctionInput(*test.constructor_args),
                               forward_input=FunctionInput(*forward), desc="")
    random = getattr(test.constructor, "__name__", "") in RANDOM_CONSTRUCTORS
    info = types.SimpleNamespace(
        name=name, module_cls=test.constructor, random_outputs=random, train_and_eval_differ=False,
        supports_gradgrad=getattr(test, "check_gradgrad", True),
        module_error_inputs_func=None, module_inputs_func=lambda *a, **k: [module_input])
    return info, dtype


def select_tests(names=None):
    from torch.testing._internal import common_nn

    cases = [(p, False) for p in common_nn.module_tests + common_nn.get_new_module_tests()]
    cases += [(p, True) for p in common_nn.criterion_tests]
    selected = []
    for params, criterion in cases:
        info, dtype = _case(params, criterion)
        if names is None or info.name in set(names):
            selected.append((info, dtype))
    return selected


def run_test(case):
    info, dtype = case
    return module_conformance.run_module(info, dtype)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", nargs="*", help="only these (test_nn names without 'test_')")
    parser.add_argument("--report", default="nn_tests_report.json")
    args = parser.parse_args(argv)
    run_all(select_tests(args.tests), run_test, module_conformance.summarize, args.report, torch.float64)
    return 0


if __name__ == "__main__":
    sys.exit(main())
