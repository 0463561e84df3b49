"""safetensors and Accelerate read checkpoints straight to the device:
load_file / safe_open with device="tpu" (whatever the import order), slices,
load_checkpoint_and_dispatch and a device_map with disk offload."""

from __future__ import annotations

import os
import subprocess
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

st = pytest.importorskip("safetensors.torch")


@pytest.fixture
def checkpoint(tmp_path):
    tensors = {"w": torch.randn(3, 4), "b": torch.arange(5, dtype=torch.int64), "h": torch.randn(2).half()}
    path = tmp_path / "t.safetensors"
    st.save_file(tensors, str(path), metadata={"format": "pt"})
    return path, tensors


@pytest.mark.parametrize("device", ["tpu", "tpu:1", torch.device("tpu", 0)], ids=str)
def test_load_file_to_the_device(checkpoint, device):
    path, tensors = checkpoint
    loaded = st.load_file(str(path), device=device)
    for name, value in tensors.items():
        assert loaded[name].device == torch.device(device if not isinstance(device, str) or ":" in device else "tpu:0")
        assert torch.equal(loaded[name].cpu(), value)


def test_safe_open_tensors_and_slices(checkpoint):
    from safetensors import safe_open

    path, tensors = checkpoint
    with safe_open(str(path), framework="pt", device="tpu") as f:
        assert sorted(f.keys()) == ["b", "h", "w"]
        assert f.metadata() == {"format": "pt"}
        assert torch.equal(f.get_tensor("w").cpu(), tensors["w"])
        piece = f.get_slice("w")
        assert piece.get_shape() == [3, 4]
        part = piece[1:, :2]
        assert part.device.type == "tpu" and torch.equal(part.cpu(), tensors["w"][1:, :2])
    with safe_open(str(path), framework="pt", device="cpu") as f:  # other devices unchanged
        assert f.get_tensor("b").device.type == "cpu"


def test_the_import_hook_keeps_safetensors_a_normal_module(tmp_path):
    # The wrap waits for safetensors' import and leaves its loader the normal one.
    code = ("import torch, sys, importlib.util, safetensors, torch_tpu._after_import as hook; "
            "assert importlib.util.find_spec('safetensors') is not None; "
            "assert safetensors.__loader__.is_package('safetensors'); "
            "assert type(safetensors.__loader__).__name__ == 'SourceFileLoader', type(safetensors.__loader__); "
            "assert 'safetensors' not in hook._pending; "
            "assert safetensors.safe_open._torch_tpu; print('ok')")
    # Run outside the source tree, which holds torch_tpu without its extension.
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


@pytest.mark.parametrize("order", ["safetensors first", "torch first"])
def test_either_import_order(checkpoint, order, tmp_path):
    path, _ = checkpoint
    imports = "import safetensors.torch as st; import torch" if order == "safetensors first" else \
        "import torch; import safetensors.torch as st"
    code = f"{imports}; print(st.load_file({str(path)!r}, device='tpu')['w'].device)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "tpu:0"


def test_accelerate_dispatch_and_disk_offload(tmp_path):
    transformers = pytest.importorskip("transformers")
    accelerate = pytest.importorskip("accelerate")
    config = transformers.LlamaConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                      intermediate_size=64, num_key_value_heads=2)
    torch.manual_seed(0)
    reference = transformers.LlamaForCausalLM(config).eval()
    reference.save_pretrained(tmp_path / "ck")
    tokens = torch.randint(0, 100, (1, 8))
    expected = reference(tokens).logits

    with accelerate.init_empty_weights():
        model = transformers.LlamaForCausalLM(config)
    model = accelerate.load_checkpoint_and_dispatch(model, str(tmp_path / "ck"), device_map={"": "tpu"}).eval()
    assert model.lm_head.weight.device.type == "tpu"
    torch.testing.assert_close(model(tokens.to("tpu")).logits.cpu(), expected, rtol=1e-4, atol=1e-4)

    device_map = {"model.embed_tokens": "tpu", "model.layers.0": "tpu", "model.layers.1": "disk",
                  "model.norm": "tpu", "model.rotary_emb": "tpu", "lm_head": "tpu"}
    model = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "ck", device_map=device_map,
                                                              offload_folder=str(tmp_path / "off")).eval()
    torch.testing.assert_close(model(tokens.to("tpu")).logits.cpu(), expected, rtol=1e-4, atol=1e-4)
