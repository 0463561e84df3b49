"""Storage methods that write host memory directly.

``UntypedStorage._byteswap`` (behind ``byteswap``, which big-endian
checkpoint code calls) swaps bytes in place through the storage's data
pointer, whatever its device; on a tpu storage that pointer is not host
memory, and the process died with a segmentation fault. A tpu storage is
swapped on a host copy and written back.
"""

from __future__ import annotations

import torch


def install() -> None:
    host_byteswap = torch.UntypedStorage._byteswap

    def _byteswap(self, elem_size):
        if self.device.type != "tpu":
            return host_byteswap(self, elem_size)
        host = self.cpu()
        host_byteswap(host, elem_size)
        self.copy_(host)

    torch.UntypedStorage._byteswap = _byteswap
