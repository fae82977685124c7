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


class Residual(nn.Module):
    """A residual MLP block: four times wider inside."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.relu(self.up(x)))


class CheckpointedMLP(nn.Module):
    """An input layer, then residual blocks, each recomputed in the backward pass when
    ``reentrant`` is ``True`` or ``False`` (``torch.utils.checkpoint``), kept when ``None``."""

    def __init__(self, width: int = 32, depth: int = 3, reentrant: bool | None = None) -> None:
        super().__init__()
        self.inp = nn.Linear(8, width)
        self.blocks = nn.ModuleList(Residual(width) for _ in range(depth))
        self.out = nn.Linear(width, 4)
        self.reentrant = reentrant

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from torch.utils.checkpoint import checkpoint

        h = self.inp(x)
        for block in self.blocks:
            if self.reentrant is None:
                h = block(h)
            else:
                h = checkpoint(block, h, use_reentrant=self.reentrant)
        return self.out(h)


class KeywordModel(nn.Module):
    """Takes keyword arguments as a Hugging Face model does, and computes its own loss."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(16, 8)
        self.head = nn.Linear(8, 16)

    def forward(self, input_ids, attention_mask=None, labels=None, scale: float = 1.0):
        h = self.embed(input_ids) * scale
        if attention_mask is not None:
            h = h * attention_mask.unsqueeze(-1)
        logits = self.head(h)
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())
        return {"loss": loss, "logits": logits} if loss is not None else {"logits": logits}


def keyword_batch(batch_size: int = 2, tokens: int = 5) -> dict[str, torch.Tensor]:
    ids = torch.randint(0, 16, (batch_size, tokens))
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}


def checkpointed_factory(batch_size: int = 4, reentrant: bool | None = None):
    """A checkpointed MLP's training step for the command line (``--option reentrant=false``;
    ``none``: no checkpointing)."""
    torch.manual_seed(0)
    model = CheckpointedMLP(reentrant=reentrant)
    return {
        "model": model,
        "example_inputs": (torch.randn(batch_size, 8),),
        "loss": nn.CrossEntropyLoss(),
        "targets": (torch.randint(0, 4, (batch_size,)),),
        "optimizer": "adam",
    }


def keyword_factory(batch_size: int = 2):
    """A model taking a batch as keyword arguments; no loss: ``--option loss=output``."""
    return {"model": KeywordModel(), "example_inputs": keyword_batch(batch_size),
            "optimizer": "adam"}


class DropoutMLP(MLP):
    def __init__(self) -> None:
        super().__init__()
        self.drop = nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.drop(torch.relu(self.fc1(x))))


def dropout_factory(batch_size: int = 4):
    """An MLP with dropout: its random numbers differ op by op from an eager step's."""
    made = mlp_factory(batch_size)
    model = DropoutMLP()
    made.update(model=model, optimizer=torch.optim.Adam(model.parameters(), lr=1e-3))
    return made


def wide_mlp_factory(batch_size: int = 128, width: int = 256, depth: int = 3):
    """A wider MLP's training step (SGD): its matrix multiplies take most of the time, the
    case the compute rate of 'calibrate --kernels torch' is for."""
    torch.manual_seed(0)
    layers: list[nn.Module] = [nn.Linear(64, width), nn.ReLU()]
    for _ in range(depth - 1):
        layers += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(width, 10))
    return {"model": model, "example_inputs": (torch.randn(batch_size, 64),),
            "loss": nn.CrossEntropyLoss(), "targets": (torch.randint(0, 10, (batch_size,)),),
            "optimizer": "sgd"}
