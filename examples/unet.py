"""UNet: a small encoder-decoder with skip connections (conv blocks with
group norm, max-pool down-sampling, bilinear up-sampling, concatenated
skips), trained with Adam to denoise synthetic images.

    python examples/unet.py [--device tpu] [--steps 12] [--compare-cpu]
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

try:
    from examples import common
except ImportError:  # run as a script from examples/
    import common


class ConvBlock(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(4, cout), nn.SiLU(),
            nn.Conv2d(cout, cout, 3, padding=1), nn.GroupNorm(4, cout), nn.SiLU())

    def forward(self, x):
        return self.body(x)


class UNet(nn.Module):
    def __init__(self, channels: int = 1, widths=(16, 32, 64)):
        super().__init__()
        self.down = nn.ModuleList()
        cin = channels
        for w in widths:
            self.down.append(ConvBlock(cin, w))
            cin = w
        self.up = nn.ModuleList()
        for w in reversed(widths[:-1]):
            self.up.append(ConvBlock(cin + w, w))
            cin = w
        self.out = nn.Conv2d(cin, channels, 1)

    def forward(self, x):
        skips = []
        for i, block in enumerate(self.down):
            x = block(x)
            if i < len(self.down) - 1:
                skips.append(x)
                x = F.max_pool2d(x, 2)
        for block in self.up:
            x = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
            x = block(torch.cat([x, skips.pop()], dim=1))
        return self.out(x)


def noisy_images(count: int, size: int = 32, seed: int = 0):
    """Smooth random fields (clean) and the same with noise added."""
    g = torch.Generator().manual_seed(seed)
    coarse = torch.rand(count, 1, size // 8, size // 8, generator=g)
    clean = F.interpolate(coarse, size=(size, size), mode="bilinear", align_corners=False)
    return clean + 0.2 * torch.randn(clean.shape, generator=g), clean


def make_step(device: str, batch: int = 8, seed: int = 0, backend: str | None = None):
    """One training step per call on `device`; with `backend`, the model runs
    under torch.compile(backend=backend)."""
    torch.manual_seed(seed)
    model = UNet().to(device)
    forward = torch.compile(model, backend=backend) if backend else model
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    noisy, clean = noisy_images(64)  # on the host, batches uploaded per step

    def step(i: int) -> torch.Tensor:
        j = (i * batch) % len(noisy)
        loss = F.mse_loss(forward(noisy[j:j + batch].to(device)), clean[j:j + batch].to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step, model


def main() -> None:
    common.run_example("UNet", __doc__, make_step, steps=12)


if __name__ == "__main__":
    main()
