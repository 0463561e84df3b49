"""Finding the PJRT plugin this process will run on.

Order: ``TORCH_TPU_PJRT_PLUGIN`` (a path) wins; then libtpu where TPU chips
exist; then an installed CUDA PJRT plugin where an NVIDIA GPU is visible; then
the XLA CPU plugin wheel. ``TORCH_TPU_PLATFORM`` restricts the search to one
platform. The result is a path; loading it is the C++ runtime's job.
"""

from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
import sys
from dataclasses import dataclass

from torch_tpu._C import config as _config

CPU_PLUGIN_REQUIREMENT = "xla-cpu-pjrt==0.0.1"


class PluginNotFoundError(RuntimeError):
    """No usable PJRT plugin is installed for the requested platform."""


@dataclass(frozen=True)
class PluginChoice:
    platform: str  # "tpu", "cuda" or "cpu"; "custom" for an explicit path
    path: str
    reason: str


def _site_dirs() -> list[str]:
    return [p for p in sys.path if p and os.path.isdir(p)]


def _package_dir(name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def tpu_chips_present() -> bool:
    # TPU VMs expose chips as /dev/accel* (v4 and older) or VFIO devices
    # with Google's PCI vendor id (v5e and newer).
    if glob.glob("/dev/accel[0-9]*"):
        return True
    for vendor in glob.glob("/sys/bus/pci/devices/*/vendor"):
        try:
            with open(vendor) as f:
                if f.read().strip() == "0x1ae0":
                    return True
        except OSError:
            continue
    return False


def nvidia_gpu_present() -> bool:
    return bool(glob.glob("/dev/nvidia[0-9]*")) or bool(
        glob.glob("/proc/driver/nvidia/gpus/*")
    )


def find_libtpu() -> str | None:
    pkg = _package_dir("libtpu")
    if pkg:
        for name in ("libtpu.so",):
            path = os.path.join(pkg, name)
            if os.path.isfile(path):
                return path
    return None


def find_cuda_plugin() -> str | None:
    # jax-cuda13-pjrt / jax-cuda12-pjrt install jax_plugins/xla_cudaNN/;
    # OpenXLA's xla-cudaNN-pjrt wheels install xla_plugins/xla_cudaNN_pjrt/.
    patterns = (
        "jax_plugins/xla_cuda13/xla_cuda_plugin.so",
        "jax_plugins/xla_cuda12/xla_cuda_plugin.so",
        "xla_plugins/xla_cuda13_pjrt/*.so",
        "xla_plugins/xla_cuda12_pjrt/*.so",
    )
    for pattern in patterns:
        for site in _site_dirs():
            hits = sorted(glob.glob(os.path.join(site, pattern)))
            if hits:
                return hits[0]
    return None


# NVIDIA's libraries as their pip packages install them (nvidia/<module>/lib),
# CUDA 13's in one package, CUDA 12's in one each. The CUDA plugin's shared
# object names them without a path; loading them first lets the dynamic
# linker find these copies, as JAX does before it loads the same plugin.
_CUDA_LIBRARIES = (
    ("cu13", ("libcudart.so.13", "libnvrtc.so.13", "libnvJitLink.so.13", "libcublasLt.so.13",
              "libcublas.so.13", "libcupti.so.13", "libcusparse.so.12", "libcusolver.so.12",
              "libcufft.so.12")),
    ("cuda_runtime", ("libcudart.so.12",)),
    ("cuda_nvrtc", ("libnvrtc.so.12",)),
    ("nvjitlink", ("libnvJitLink.so.12",)),
    ("cublas", ("libcublasLt.so.12", "libcublas.so.12")),
    ("cuda_cupti", ("libcupti.so.12",)),
    ("cusparse", ("libcusparse.so.12",)),
    ("cusolver", ("libcusolver.so.11",)),
    ("cufft", ("libcufft.so.11",)),
    ("nccl", ("libnccl.so.2",)),
    ("nvshmem", ("libnvshmem_host.so.3",)),
    ("cudnn", ("libcudnn.so.9",)),
)


def preload_cuda_libraries() -> list[str]:
    """Loads the NVIDIA libraries that pip packages provide; returns their
    paths. A library that is missing is left to the plugin's own load,
    whose error names it."""
    loaded = []
    for module, names in _CUDA_LIBRARIES:
        pkg = _package_dir(f"nvidia.{module}")
        if pkg is None:
            continue
        for name in names:
            path = os.path.join(pkg, "lib", name)
            if os.path.isfile(path):
                try:
                    ctypes.CDLL(path)
                    loaded.append(path)
                except OSError:
                    pass
    return loaded


def client_defaults(platform: str) -> str:
    """The client options a platform's plugin is created with unless
    TORCH_TPU_PJRT_CLIENT_OPTIONS says otherwise, in that variable's form."""
    if platform == "cuda":
        # The CUDA plugin would take 75% of the GPU's memory at start; like
        # PyTorch's CUDA allocator, take it as it is needed, so the process
        # can share the GPU (with torch.cuda too).
        return "preallocate=false"
    return ""


def find_cpu_plugin() -> str | None:
    for site in _site_dirs():
        path = os.path.join(site, "xla_plugins", "xla_cpu_pjrt", "xla_cpu_pjrt.so")
        if os.path.isfile(path):
            return path
    return None


def choose_plugin() -> PluginChoice:
    explicit = _config.get("TORCH_TPU_PJRT_PLUGIN")
    if explicit:
        return PluginChoice("custom", explicit, "TORCH_TPU_PJRT_PLUGIN")

    wanted = _config.get("TORCH_TPU_PLATFORM").lower()
    if wanted not in ("", "tpu", "cuda", "cpu"):
        raise ValueError(
            f"TORCH_TPU_PLATFORM={wanted!r}: expected 'tpu', 'cuda' or 'cpu'"
        )
    missing = []
    if wanted in ("", "tpu") and (wanted == "tpu" or tpu_chips_present()):
        path = find_libtpu()
        if path:
            return PluginChoice("tpu", path, "TPU chips present, libtpu installed")
        missing.append("TPU: `pip install libtpu`")
    if wanted in ("", "cuda") and (wanted == "cuda" or nvidia_gpu_present()):
        path = find_cuda_plugin()
        if path:
            return PluginChoice("cuda", path, "NVIDIA GPU present, CUDA plugin installed")
        missing.append("NVIDIA GPU: `pip install jax-cuda13-pjrt`")
    if wanted in ("", "cpu"):
        path = find_cpu_plugin()
        if path:
            return PluginChoice("cpu", path, "XLA CPU plugin wheel")
        missing.append(f"CPU: `pip install {CPU_PLUGIN_REQUIREMENT}`")
    raise PluginNotFoundError(
        "torch_tpu found no PJRT plugin"
        + (f" for platform {wanted!r}" if wanted else "")
        + ". Install one: "
        + "; ".join(missing)
        + ". Or set TORCH_TPU_PJRT_PLUGIN to a plugin's path."
    )
