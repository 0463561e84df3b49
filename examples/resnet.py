"""ResNet on CIFAR-sized images: basic residual blocks with batch norm,
trained with SGD (momentum, weight decay) on synthetic labelled images.

    python examples/resnet.py [--device tpu] [--steps 12] [--compare-cpu]
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class ResNet(nn.Module):
    """ResNet-8-ish: a stem, three stages of one block each, global pooling."""

    def __init__(self, widths=(16, 32, 64), classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU())
        stages, cin = [], widths[0]
        for i, w in enumerate(widths):
            stages.append(BasicBlock(cin, w, 1 if i == 0 else 2))
            cin = w
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(self.pool(self.stages(self.stem(x))).flatten(1))


def images(count: int, classes: int = 10, seed: int = 0):
    """Class-dependent colour blobs plus noise, 3x32x32."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(classes, (count,), generator=g)
    palette = torch.rand(classes, 3, 1, 1, generator=g)
    x = palette[labels] + 0.3 * torch.randn(count, 3, 32, 32, generator=g)
    return x, labels


def make_step(device: str, batch: int = 16, seed: int = 0, backend: str | None = None,
              whole_step: bool = False, train: bool = True, graphed: bool = False):
    """One SGD training step per call on `device`; with `backend`, the model
    runs under torch.compile(backend=backend), with `whole_step` as well the
    whole step does (forward, loss, backward, optimizer). With `graphed`, the
    step is captured into a device graph and replayed
    (examples/graph_step.py). With `train=False` a step is the evaluation
    forward and loss, without gradients."""
    torch.manual_seed(seed)
    model = ResNet().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    x, y = images(128)  # the data set stays on the host, as a DataLoader's would

    forward = torch.compile(model, backend=backend) if backend and not whole_step else model

    def update(xb, yb):
        loss = F.cross_entropy(forward(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    if not train:
        model.eval()
        update = torch.no_grad()(lambda xb, yb: F.cross_entropy(forward(xb), yb))
    if backend and whole_step:
        update = torch.compile(update, backend=backend)
    if graphed:
        try:
            from examples.graph_step import graphed as capture
        except ImportError:  # examples/ on the path
            from graph_step import graphed as capture
        update = capture(update)

    def step(i: int) -> torch.Tensor:
        j = (i * batch) % len(x)
        return update(x[j:j + batch].to(device), y[j:j + batch].to(device))

    return step, model


def main() -> None:
    # Imported here: the model code needs only torch (benchmarks/torchax_step.py
    # runs it where torch_tpu is not installed).
    try:
        from examples import common
    except ImportError:  # run as a script from examples/
        import common
    common.run_example("ResNet", __doc__, make_step, steps=12)


if __name__ == "__main__":
    main()
