"""Tiny models for the execution tests: an MLP, a small ResNet and a transformer encoder layer."""

from __future__ import annotations

import itertools

import torch
from torch import nn


class Block(nn.Module):
    """A basic residual block: two 3x3 convolutions with batch-norm, and a shortcut."""

    def __init__(self, c_in: int, c_out: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = nn.Sequential()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + self.shortcut(x))


class SmallResNet(nn.Module):
    def __init__(self, width: int = 4, n_classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(width)
        self.layer1 = Block(width, width)
        self.layer2 = Block(width, 2 * width, stride=2)
        self.fc = nn.Linear(2 * width, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn(self.stem(x)))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class Encoder(nn.Module):
    """One transformer encoder layer (no dropout, so a step is deterministic) and a head."""

    def __init__(self, d_model: int = 16, heads: int = 2, n_classes: int = 4) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(
            d_model, heads, dim_feedforward=32, dropout=0.0, batch_first=True
        )
        self.head = nn.Linear(d_model, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.layer(x).mean(dim=1))


class MLP(nn.Module):
    def __init__(self, n_in: int = 8, hidden: int = 16, n_out: int = 4) -> None:
        super().__init__()
        self.fc1 = nn.Linear(n_in, hidden)
        self.fc2 = nn.Linear(hidden, n_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def case(name: str, optimizer: str = "adam", seed: int = 0):
    """``(model, inputs, loss, targets, optimizer)`` of a test case, seeded, optimizer warm."""
    from autotm_torch.step_values import warm_up

    torch.manual_seed(seed)
    if name == "mlp":
        model, x, n_classes = MLP(), torch.randn(4, 8), 4
    elif name == "resnet":
        model, x, n_classes = SmallResNet(), torch.randn(2, 3, 8, 8), 10
    elif name == "encoder":
        model, x, n_classes = Encoder(), torch.randn(2, 6, 16), 4
    else:
        raise ValueError(name)
    y = torch.randint(0, n_classes, (x.shape[0],))
    if optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    elif optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    warm_up(opt)
    return model, (x,), nn.CrossEntropyLoss(), (y,), opt


def two_pools(fast_nbytes: int = 1 << 30):
    """A fast and a slow pool (no NUMA node: both bound to the first allowed node)."""
    from autotm_core.memory import CopyLink, MemorySystem, Pool

    return MemorySystem(
        name="two-pools", flops_per_second=1e11,
        pools=(Pool("fast", fast_nbytes, 20e9, 20e9), Pool("slow", None, 10e9, 5e9)),
        links=(CopyLink("slow", "fast", 10e9, 5e9), CopyLink("fast", "slow", 5e9, 5e9)),
    )


def round_trips(graph, system):
    """All in the fast pool, except that every activation with a gap of 3 kernels or more
    between two uses goes to the slow pool and back by asynchronous moves during the gap."""
    from autotm_core import TensorKind
    from autotm_core.plans import Move, MoveKind, Residency, make_plan

    live = graph.liveness
    residencies, moves = [], []
    for t, tensor in enumerate(graph.tensors):
        first, last = int(live.first[t]), int(live.last[t])
        if last < first:
            continue
        users = live.users(t).tolist()
        gap = next(((a, b) for a, b in itertools.pairwise(users) if b - a >= 3), None)
        if tensor.kind is not TensorKind.ACTIVATION or gap is None:
            residencies.append(Residency(tensor.name, "fast", first, last))
            continue
        a, b = gap
        residencies += [Residency(tensor.name, "fast", first, a + 1),
                        Residency(tensor.name, "slow", a + 1, b - 1),
                        Residency(tensor.name, "fast", b - 1, last)]
        moves += [Move(tensor.name, "fast", "slow", a + 1, MoveKind.ASYNC),
                  Move(tensor.name, "slow", "fast", b - 1, MoveKind.ASYNC)]
    return make_plan(graph, system, residencies=residencies, moves=moves,
                     planner="test/round-trips")
