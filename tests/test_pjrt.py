"""The PJRT layer on the CPU plugin: plugin loading, client, transfers,
compile, execute, serialization, and the errors bad input must give."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from torch_tpu import runtime
from torch_tpu._C import hlo, pjrt

# Every dtype PyTorch has a device match for, as (device name, numpy dtype).
DTYPES = [
    ("f64", np.float64), ("f32", np.float32), ("f16", np.float16),
    ("s64", np.int64), ("s32", np.int32), ("s16", np.int16), ("s8", np.int8),
    ("u8", np.uint8), ("pred", np.bool_), ("c64", np.complex64), ("c128", np.complex128),
]


def sample(np_dtype, shape, rng):
    if np_dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(np_dtype, np.integer):
        info = np.iinfo(np_dtype)
        return rng.integers(info.min, info.max, shape, dtype=np_dtype, endpoint=True)
    if np.issubdtype(np_dtype, np.complexfloating):
        return np.asarray(rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np_dtype)
    return np.asarray(rng.standard_normal(shape)).astype(np_dtype)


def test_plugin_reports_versions(client):
    plugin = runtime._C.runtime.plugin()
    major, minor = plugin.api_version
    assert major == 0 and minor >= 40
    attrs = plugin.attributes()
    assert "stablehlo_current_version" in attrs


def test_client_lists_devices(client):
    devices = client.devices()
    assert len(devices) >= 1
    assert [d.id for d in devices] == sorted(d.id for d in devices)
    assert client.platform_name == "cpu"


@pytest.mark.parametrize("name,np_dtype", DTYPES, ids=[d[0] for d in DTYPES])
@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (7,), (2, 3, 5)], ids=str)
def test_round_trip_every_dtype(client, rng, name, np_dtype, shape):
    host = sample(np_dtype, shape, rng)
    buf = client.to_device(host)
    assert buf.dtype == name
    assert buf.shape == shape
    back = buf.to_numpy()
    assert back.dtype == host.dtype
    np.testing.assert_array_equal(back, host)


@pytest.mark.parametrize("shape", [(), (0,), (5, 3)], ids=str)
def test_round_trip_bf16_as_bits(client, shape):
    values = torch.randn(shape, dtype=torch.float32).to(torch.bfloat16)
    bits = values.view(torch.int16).numpy().view(np.uint16)
    buf = client.to_device(bits, dtype="bf16")
    assert buf.dtype == "bf16" and buf.shape == shape
    back = torch.from_numpy(buf.to_numpy().view(np.int16)).view(torch.bfloat16)
    assert torch.equal(back, values)


def test_round_trip_non_contiguous(client, rng):
    base = rng.standard_normal((6, 8)).astype(np.float32)
    for view in (base[::2, 1::3], base.T, base[:, ::-1], base[1:4]):
        np.testing.assert_array_equal(client.to_device(view).to_numpy(), view)


def test_copy_between_devices(client, rng):
    if len(client.devices()) < 2:
        pytest.skip("one device only")
    host = rng.standard_normal((4, 4)).astype(np.float32)
    moved = client.copy_to_device(client.to_device(host, device=0), 1)
    np.testing.assert_array_equal(moved.to_numpy(), host)


def test_compile_and_execute_async(client, rng):
    b = hlo.Builder("add")
    x = b.parameter("f32", [3, 4])
    y = b.parameter("f32", [3, 4])
    exe = client.compile(b.build([b.add(x, y)]))
    assert exe.num_outputs == 1
    assert exe.output_shapes == [("f32", (3, 4))]
    a, c = (rng.standard_normal((3, 4)).astype(np.float32) for _ in range(2))
    (out,) = exe.execute([client.to_device(a), client.to_device(c)])  # no wait
    out.block_until_ready()
    np.testing.assert_allclose(out.to_numpy(), a + c)


def test_execute_on_every_device(client, rng):
    b = hlo.Builder("neg")
    x = b.parameter("f32", [5])
    exe = client.compile(b.build([b.negate(x)]))
    host = rng.standard_normal(5).astype(np.float32)
    for device in range(len(client.devices())):
        (out,) = exe.execute([client.to_device(host, device=device)], device=device, wait=True)
        np.testing.assert_array_equal(out.to_numpy(), -host)


def test_serialize_and_deserialize(client):
    b = hlo.Builder("twice")
    x = b.parameter("s32", [4])
    exe = client.compile(b.build([b.add(x, x)]))
    blob = exe.serialize()
    assert isinstance(blob, bytes) and len(blob) > 0
    again = client.deserialize(blob)
    (out,) = again.execute([client.to_device(np.arange(4, dtype=np.int32))], wait=True)
    np.testing.assert_array_equal(out.to_numpy(), [0, 2, 4, 6])


def test_compile_with_option_overrides(client, rng):
    b = hlo.Builder("add")
    x = b.parameter("f32", [8])
    text = b.build([b.add(x, x)])
    host = rng.standard_normal(8).astype(np.float32)
    for overrides in ({"xla_cpu_enable_fast_min_max": False}, {"xla_cpu_parallel_codegen_split_count": 2},
                      {"xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_REDUCE"}):
        exe = client.compile(text, overrides=overrides)
        (out,) = exe.execute([client.to_device(host)], wait=True)
        np.testing.assert_array_equal(out.to_numpy(), host + host)
    with pytest.raises(pjrt.PjrtError, match="no_such_option"):
        client.compile(text, overrides={"xla_no_such_option": True})
    with pytest.raises(TypeError, match="xla_cpu_enable_fast_min_max"):
        client.compile(text, overrides={"xla_cpu_enable_fast_min_max": [1]})


def test_compile_error_carries_plugin_message(client):
    with pytest.raises(pjrt.PjrtError, match="PJRT_Client_Compile.*(parse|unknown|error)"):
        client.compile("this is not a StableHLO module")


def test_type_error_in_program_is_an_exception(client):
    bad = (
        'module @m {\n  func.func public @main(%arg0: tensor<2xf32>) -> (tensor<3xf32>) {\n'
        '    "func.return"(%arg0) : (tensor<2xf32>) -> ()\n  }\n}\n'
    )
    with pytest.raises(pjrt.PjrtError):
        client.compile(bad)


def test_execute_with_wrong_arguments_is_an_exception(client):
    b = hlo.Builder("one_arg")
    x = b.parameter("f32", [2])
    exe = client.compile(b.build([b.negate(x)]))
    with pytest.raises(pjrt.PjrtError):
        exe.execute([], wait=True)


def test_bad_device_index(client):
    with pytest.raises(IndexError, match="out of range"):
        client.to_device(np.zeros(2, np.float32), device=99)


def test_unsupported_numpy_dtype(client):
    with pytest.raises(ValueError, match="no device element type"):
        client.to_device(np.array(["a", "b"]))


def _load_in_subprocess(path: str) -> subprocess.CompletedProcess:
    code = (
        "import sys, torch_tpu\n"
        "from torch_tpu._C import pjrt\n"
        "try:\n"
        "    pjrt.Plugin.load(sys.argv[1])\n"
        "except RuntimeError as e:\n"
        "    print('ERROR:', e)\n"
    )
    return subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                          timeout=120, cwd=os.path.dirname(os.path.abspath(__file__)))


def test_missing_plugin_path_is_a_clear_error():
    result = _load_in_subprocess("/nonexistent/libplugin.so")
    assert result.returncode == 0, result.stderr
    assert "no such file" in result.stdout


def test_non_plugin_library_is_a_clear_error():
    path = next(p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6") if os.path.exists(p))
    result = _load_in_subprocess(path)
    assert result.returncode == 0, result.stderr
    assert "not a PJRT plugin" in result.stdout


def test_non_library_file_is_a_clear_error(tmp_path):
    fake = tmp_path / "libfake.so"
    fake.write_text("not an ELF file")
    result = _load_in_subprocess(str(fake))
    assert result.returncode == 0, result.stderr
    assert "cannot load the PJRT plugin" in result.stdout
