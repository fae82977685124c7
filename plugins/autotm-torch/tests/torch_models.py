"""Tiny models for the tests, and a factory for the command line round trip."""

from __future__ import annotations

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, n_in: int = 8, hidden: int = 16, n_out: int = 4) -> None:
        super().__init__()
        self.fc1 = nn.Linear(n_in, hidden)
        self.fc2 = nn.Linear(hidden, n_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.fc(x.flatten(1))


class Expand(nn.Module):
    """Broadcasts a (1, n) input to (rows, n) by a view, then reduces it."""

    def __init__(self, rows: int) -> None:
        super().__init__()
        self.rows = rows

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        wide = x.expand(self.rows, x.shape[1])  # a view: owns no bytes
        return wide.t().sum(dim=0)


class InPlace(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        y.relu_()
        return y


class DataDependent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        if y.sum() > 0:  # the value of a tensor decides the path
            return y * 2
        return y


def mlp_factory(batch_size: int = 4, hidden: int = 16):
    """The command line's factory, in the mapping form (it carries the loss targets)."""
    model = MLP(hidden=hidden)
    x = torch.randn(batch_size, 8)
    return {
        "model": model,
        "example_inputs": (x,),
        "loss": nn.CrossEntropyLoss(),
        "targets": (torch.randint(0, 4, (batch_size,)),),
        "optimizer": torch.optim.Adam(model.parameters(), lr=1e-3),
    }


def mlp_tuple_factory(batch_size: int = 4):
    model = MLP()
    return model, (torch.randn(batch_size, 8),), None, torch.optim.SGD(model.parameters(), lr=0.1)


def data_dependent_factory(batch_size: int = 4):
    model = DataDependent()
    return model, (torch.randn(batch_size, 8),), None, "sgd"
