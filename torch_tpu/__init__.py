"""torch-tpu: the TPU as a native PyTorch device, on XLA through PJRT.

Importing the package loads the native core; the PJRT plugin is loaded
lazily, on first use of the device (see torch_tpu.runtime).
"""

import torch  # noqa: F401  (loads libtorch before the extension)

from torch_tpu import _C  # noqa: F401
from torch_tpu import runtime  # noqa: F401
from torch_tpu._plugin import PluginNotFoundError  # noqa: F401

__version__ = "0.1.0"
