"""Plugin discovery order, configuration and `python -m torch_tpu.info`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import torch_tpu
from torch_tpu import _plugin
from torch_tpu._C import config

ROOT = Path(__file__).resolve().parents[1]


def test_cpu_plugin_is_found():
    path = _plugin.find_cpu_plugin()
    assert path and os.path.isfile(path)


def test_default_choice_on_this_machine(monkeypatch):
    monkeypatch.delenv("TORCH_TPU_PJRT_PLUGIN", raising=False)
    monkeypatch.delenv("TORCH_TPU_PLATFORM", raising=False)
    monkeypatch.setattr(_plugin, "tpu_chips_present", lambda: False)
    monkeypatch.setattr(_plugin, "nvidia_gpu_present", lambda: False)
    choice = _plugin.choose_plugin()
    assert choice.platform == "cpu"


def test_explicit_path_wins(monkeypatch):
    monkeypatch.setenv("TORCH_TPU_PJRT_PLUGIN", "/some/where/plugin.so")
    monkeypatch.setattr(_plugin, "tpu_chips_present", lambda: True)
    choice = _plugin.choose_plugin()
    assert choice.path == "/some/where/plugin.so"
    assert choice.platform == "custom"


def test_tpu_before_gpu_before_cpu(monkeypatch, tmp_path):
    monkeypatch.delenv("TORCH_TPU_PJRT_PLUGIN", raising=False)
    monkeypatch.delenv("TORCH_TPU_PLATFORM", raising=False)
    monkeypatch.setattr(_plugin, "tpu_chips_present", lambda: True)
    monkeypatch.setattr(_plugin, "nvidia_gpu_present", lambda: True)
    monkeypatch.setattr(_plugin, "find_libtpu", lambda: "/x/libtpu.so")
    monkeypatch.setattr(_plugin, "find_cuda_plugin", lambda: "/x/cuda.so")
    assert _plugin.choose_plugin().platform == "tpu"
    monkeypatch.setattr(_plugin, "tpu_chips_present", lambda: False)
    assert _plugin.choose_plugin().platform == "cuda"
    monkeypatch.setattr(_plugin, "nvidia_gpu_present", lambda: False)
    assert _plugin.choose_plugin().platform == "cpu"


def test_cuda_plugin_found_in_site_packages(monkeypatch, tmp_path):
    plugin = tmp_path / "jax_plugins" / "xla_cuda13" / "xla_cuda_plugin.so"
    plugin.parent.mkdir(parents=True)
    plugin.write_bytes(b"")
    monkeypatch.setattr(sys, "path", [str(tmp_path)] + sys.path)
    assert _plugin.find_cuda_plugin() == str(plugin)


def test_platform_restriction_without_plugin_says_what_to_install(monkeypatch):
    monkeypatch.delenv("TORCH_TPU_PJRT_PLUGIN", raising=False)
    monkeypatch.setenv("TORCH_TPU_PLATFORM", "tpu")
    monkeypatch.setattr(_plugin, "find_libtpu", lambda: None)
    with pytest.raises(torch_tpu.PluginNotFoundError, match="pip install libtpu"):
        _plugin.choose_plugin()


def test_no_plugin_at_all_says_what_to_install(monkeypatch):
    monkeypatch.delenv("TORCH_TPU_PJRT_PLUGIN", raising=False)
    monkeypatch.delenv("TORCH_TPU_PLATFORM", raising=False)
    monkeypatch.setattr(_plugin, "tpu_chips_present", lambda: False)
    monkeypatch.setattr(_plugin, "nvidia_gpu_present", lambda: False)
    monkeypatch.setattr(_plugin, "find_cpu_plugin", lambda: None)
    with pytest.raises(torch_tpu.PluginNotFoundError, match="xla-cpu-pjrt"):
        _plugin.choose_plugin()


def test_bad_platform_value(monkeypatch):
    monkeypatch.delenv("TORCH_TPU_PJRT_PLUGIN", raising=False)
    monkeypatch.setenv("TORCH_TPU_PLATFORM", "fpga")
    with pytest.raises(ValueError, match="TORCH_TPU_PLATFORM"):
        _plugin.choose_plugin()


def test_every_env_var_is_documented():
    doc = (ROOT / "docs" / "configuration.md").read_text()
    names = [name for name, _, _ in config.env_vars()]
    assert names, "no variables declared"
    for name in names:
        assert name in doc, f"{name} is declared in csrc/runtime/config.h but not documented"
    # ...and the doc lists nothing that is not declared.
    documented = set(re.findall(r"`(TORCH_TPU_[A-Z0-9_]+)`", doc))
    assert documented <= set(names), documented - set(names)


def test_undeclared_variable_is_rejected():
    with pytest.raises(ValueError, match="not a torch_tpu configuration variable"):
        config.get("TORCH_TPU_NO_SUCH_THING")


def test_info_module_prints_the_facts(tmp_path):
    env = dict(os.environ, TORCH_TPU_CACHE_DIR=str(tmp_path))
    result = subprocess.run([sys.executable, "-m", "torch_tpu.info"], capture_output=True,
                            text=True, timeout=300, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for field in ("platform", "plugin_path", "xla_version", "stablehlo_version",
                  "device_count", "cache_dir"):
        assert field in out
    assert re.search(r"platform\s+cpu", out)
    assert str(tmp_path) in out


def test_default_cache_dir_follows_xdg(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TORCH_TPU_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    result = subprocess.run([sys.executable, "-m", "torch_tpu.info"], capture_output=True,
                            text=True, timeout=300, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert str(tmp_path / "torch_tpu") in result.stdout


def test_info_with_a_broken_plugin_path_fails_cleanly(tmp_path):
    env = dict(os.environ, TORCH_TPU_PJRT_PLUGIN=str(tmp_path / "missing.so"))
    result = subprocess.run([sys.executable, "-m", "torch_tpu.info"], capture_output=True,
                            text=True, timeout=300, env=env, cwd=tmp_path)
    assert result.returncode != 0
    assert "no such file" in result.stderr
    assert "Traceback" not in result.stderr


def _device_count_with(tmp_path, **env_vars) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TORCH_TPU_CPU_DEVICE_COUNT"}
    env.update(env_vars, TORCH_TPU_PLATFORM="cpu")
    return subprocess.run([sys.executable, "-c", "import torch; print(torch.tpu.device_count())"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)


def test_client_options_reach_the_plugin(tmp_path):
    result = _device_count_with(tmp_path, TORCH_TPU_PJRT_CLIENT_OPTIONS="cpu_device_count=3")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "3"


def test_malformed_client_option_is_named(tmp_path):
    result = _device_count_with(tmp_path, TORCH_TPU_PJRT_CLIENT_OPTIONS="cpu_device_count")
    assert result.returncode != 0
    assert "TORCH_TPU_PJRT_CLIENT_OPTIONS" in result.stderr and "name=value" in result.stderr


def test_cuda_libraries_are_preloaded_from_pip_packages(monkeypatch, tmp_path):
    # A stand-in for CUDA's runtime library: any loadable shared object,
    # here a copy of a standard-library extension module.
    import math
    if not getattr(math, "__file__", None):
        pytest.skip("math is built into this interpreter")
    lib = tmp_path / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    stand_in = lib / "libcudart.so.13"
    stand_in.write_bytes(Path(math.__file__).read_bytes())
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "nvidia" or m.startswith("nvidia.")]:
        monkeypatch.delitem(sys.modules, name)
    assert str(stand_in) in _plugin.preload_cuda_libraries()


def test_cuda_client_takes_memory_as_needed():
    assert _plugin.client_defaults("cuda") == "preallocate=false"
    assert _plugin.client_defaults("cpu") == ""
