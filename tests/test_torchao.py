"""torchao's quantization on the device: quantize_ configs (int8 weight-only
and dynamic, int4 intx, float8 weight-only) in strict, fused and compiled
modes, float8 training and quantization-aware training, and Hugging Face's
TorchAoConfig loading, each against the same torchao path on CPU. torchao
is Python over aten ops (torch._int_mm, _weight_int8pack_mm, _scaled_mm,
tensor subclasses), so these check the device's lowerings under it."""

from __future__ import annotations

import copy
import os
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

import torch_tpu  # noqa: E402

with warnings.catch_warnings():  # its CUDA kernels' libraries do not load on a CPU build
    warnings.simplefilter("ignore")
    Q = pytest.importorskip("torchao.quantization")
    from torchao.float8 import convert_to_float8_training  # noqa: E402
    from torchao.quantization.qat import QATConfig  # noqa: E402

CONFIGS = {
    "int8_weight_only": lambda: Q.Int8WeightOnlyConfig(),
    "int8_dynamic": lambda: Q.Int8DynamicActivationInt8WeightConfig(),
    "int4_intx_weight_only": lambda: Q.IntxWeightOnlyConfig(weight_dtype=torch.int4),
    "float8_weight_only": lambda: Q.Float8WeightOnlyConfig(),
}


def mlp(dtype=torch.bfloat16):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(256, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64)).to(dtype)


def quantized(model, config, device):
    model = copy.deepcopy(model).to(device)
    Q.quantize_(model, config)
    return model


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_quantize_matches_cpu(name):
    model, x = mlp(), torch.randn(4, 256, dtype=torch.bfloat16)
    want = quantized(model, CONFIGS[name](), "cpu")(x)
    on_tpu = quantized(model, CONFIGS[name](), "tpu")
    weight = on_tpu[0].weight
    assert weight.device.type == "tpu" and type(weight) is not torch.nn.Parameter, type(weight)
    with torch.no_grad():
        torch.testing.assert_close(on_tpu(x.to("tpu")).cpu(), want.detach())


@pytest.mark.parametrize("mode", ["fused", "compiled"])
def test_quantized_model_in_fused_eager_and_compiled(mode):
    model, x = mlp(), torch.randn(4, 256, dtype=torch.bfloat16)
    config = Q.Int8DynamicActivationInt8WeightConfig
    want = quantized(model, config(), "cpu")(x).detach()
    on_tpu = quantized(model, config(), "tpu")
    with torch.no_grad():
        if mode == "fused":
            with torch_tpu.eager_mode("fused"):
                got = on_tpu(x.to("tpu")).cpu()
        else:
            compiled = torch.compile(on_tpu, backend="tpu")
            compiled(x.to("tpu"))
            got = compiled(x.to("tpu")).cpu()
    torch.testing.assert_close(got, want)


def train(model, device, steps=3):
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 64, generator=torch.Generator().manual_seed(1)).to(device)
    losses = []
    for _ in range(steps):
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses, model


@pytest.mark.parametrize("recipe", ["float8_training", "qat_int4"])
def test_training_recipes_match_cpu(recipe):
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 32))

    def prepare(model):
        if recipe == "float8_training":
            convert_to_float8_training(model)
        else:
            Q.quantize_(model, QATConfig(Q.Int8DynamicActivationIntxWeightConfig(
                weight_dtype=torch.int4, weight_granularity=Q.PerGroup(32)), step="prepare"))
        return model

    want, cpu_model = train(prepare(copy.deepcopy(base)), "cpu")
    got, tpu_model = train(prepare(copy.deepcopy(base)), "tpu")
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(tpu_model[0].weight.detach().cpu(), cpu_model[0].weight.detach(), rtol=1e-4, atol=1e-5)


def test_transformers_torchao_config_loads_on_the_device(tmp_path):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=100, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2)
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path / "fp")
    quantization = transformers.TorchAoConfig(Q.Int8WeightOnlyConfig())

    def load(path, device, **kwargs):
        return transformers.AutoModelForCausalLM.from_pretrained(path, device_map=device, dtype=torch.bfloat16,
                                                                 **kwargs).eval()

    cpu = load(tmp_path / "fp", "cpu", quantization_config=quantization)
    tpu = load(tmp_path / "fp", "tpu", quantization_config=quantization)
    assert type(tpu.model.layers[0].mlp.up_proj.weight).__name__ == type(cpu.model.layers[0].mlp.up_proj.weight).__name__
    x = torch.randint(0, 100, (1, 8), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = cpu(x).logits.float()
        torch.testing.assert_close(tpu(x.to("tpu")).logits.float().cpu(), want, rtol=0.02, atol=0.02)
        tokens = dict(max_new_tokens=4, do_sample=False)
        assert tpu.generate(x.to("tpu"), **tokens).cpu().tolist() == cpu.generate(x, **tokens).tolist()
    # torchao's tensors are saved with torch.save (not safetensors) and load back onto the device.
    tpu.save_pretrained(tmp_path / "int8", safe_serialization=False)
    again = load(tmp_path / "int8", "tpu")
    assert again.model.layers[0].mlp.up_proj.weight.device.type == "tpu"
    with torch.no_grad():
        torch.testing.assert_close(again(x.to("tpu")).logits.float().cpu(), want, rtol=0.02, atol=0.02)
