"""The one PyTorch model of this example, served three ways (see README.md)."""

from __future__ import annotations

import torch
from torch import nn

FEATURES = 8
CLASSES = 3


class Net(nn.Module):
    """A small MLP: 8 features -> 3 class probabilities."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(FEATURES, 32),
            nn.LayerNorm(32),
            nn.GELU(),
            nn.Linear(32, 16),
            nn.Tanh(),
            nn.Linear(16, CLASSES),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.layers(x), dim=-1)
