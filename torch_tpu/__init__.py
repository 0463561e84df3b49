"""torch-tpu: the TPU as a native PyTorch device, on XLA through PJRT.

Importing the package loads the native core and registers the ``tpu``
device with PyTorch (``torch.device("tpu")``, ``torch.tpu``, ``Tensor.tpu()``,
``torch.accelerator``). A plain ``import torch`` imports it too, through the
``torch.backends`` entry point (``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` turns that
off). The PJRT plugin is loaded lazily, on first use of the device (see
torch_tpu.runtime and torch.tpu._lazy_init).
"""


def _autoload() -> None:
    """The ``torch.backends`` entry point, called by ``import torch``.

    Importing this package is the whole registration. Defined before
    ``import torch`` below: when torch_tpu is imported first, torch's own
    import calls this while torch_tpu is still half-imported.
    """


import sys  # noqa: E402

import torch  # noqa: E402  (loads libtorch before the extension)

from torch_tpu import _C  # noqa: E402,F401
from torch_tpu import runtime  # noqa: E402,F401
from torch_tpu._plugin import PluginNotFoundError  # noqa: E402,F401

__version__ = "0.1.0"


def _register_device() -> None:
    import torch_tpu.tpu as tpu_module

    torch.utils.rename_privateuse1_backend("tpu")
    torch._register_device_module("tpu", tpu_module)
    # `import torch.tpu.amp` (as `import torch.cuda.amp`) finds the loaded
    # submodules instead of loading second copies under torch.tpu's name.
    for name in ("amp", "memory", "random"):
        sys.modules[f"torch.tpu.{name}"] = getattr(tpu_module, name)
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_storage=True
    )
    tpu_module._set_runtime_callbacks()


_register_device()
del _register_device

from torch_tpu import _printing  # noqa: E402

_printing.install()

from torch_tpu import _exit  # noqa: E402

_exit.install()

from torch_tpu import _safetensors  # noqa: E402

_safetensors.install()

from torch_tpu import _accelerate  # noqa: E402

_accelerate.install()

from torch_tpu import _trainer_compile  # noqa: E402

_trainer_compile.install()

from torch_tpu import _rng_checkpoints  # noqa: E402

_rng_checkpoints.install()

from torch_tpu import _flex_attention  # noqa: E402

_flex_attention.install()

from torch_tpu import _transformers_flex  # noqa: E402

_transformers_flex.install()

from torch_tpu import _dtensor_attention  # noqa: E402

_dtensor_attention.install()

from torch_tpu import _multiprocessing  # noqa: E402

_multiprocessing.install()

from torch_tpu import _storage  # noqa: E402

_storage.install()

from torch_tpu import _higher_order_autocast  # noqa: E402

_higher_order_autocast.install()

from torch_tpu import _autocast_dtype  # noqa: E402

_autocast_dtype.install()

from torch_tpu import _data_parallel  # noqa: E402

_data_parallel.install()

from torch_tpu.fallback import (  # noqa: E402,F401
    cpu_fallback,
    cpu_fallback_counts,
    reset_cpu_fallback_counts,
    set_cpu_fallback,
)
from torch_tpu import diagnostics  # noqa: E402,F401
from torch_tpu.eager import (  # noqa: E402,F401
    eager_mode,
    fused_stats,
    get_eager_mode,
    materialize,
    reset_fused_stats,
    set_eager_mode,
)

from torch_tpu import _compile  # noqa: E402

_compile.install()

from torch_tpu import distributed as _distributed  # noqa: E402

_distributed.install()

from torch_tpu import kernels  # noqa: E402,F401
