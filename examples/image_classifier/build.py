"""Train the ant/bee classifier and write its repository: ``python build.py [OUTPUT_DIR]``.

Draws a few hundred ants and bees (drawing.py), trains a tiny CNN on them for a
few seconds, and writes to ``OUTPUT_DIR`` (default: ``build/`` beside this file)

- ``repository/ant_bee/``: ``config.pbtxt``, ``labels.txt`` and ``1/model.pt``,
  the CNN with a softmax as TorchScript (Triton's ``pytorch_libtorch`` platform);
- ``images/ant_<i>.png``, ``images/bee_<i>.png``: pictures the model never saw in
  training, for client.py and runner_app.py.

Needs ``torch`` and ``pillow``.
"""

from __future__ import annotations

import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import torch
from drawing import LABELS, draw
from preprocess import preprocess
from torch import nn

HERE = Path(__file__).resolve().parent
SAMPLES = 3  # sample pictures of each insect


def tiny_cnn() -> nn.Module:
    """Two 3x3 convolutions (the first with stride 2) over 64x64 RGB, global average pooling, two logits."""
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, len(LABELS)),
    )  # fmt: skip


def data_set(per_label: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    rng = np.random.default_rng(seed)
    labels = np.arange(per_label * len(LABELS)) % len(LABELS)
    images = np.stack([preprocess(draw(LABELS[label], rng)) for label in labels])
    return torch.from_numpy(images), torch.from_numpy(labels)


def train(max_epochs: int = 20) -> nn.Module:
    """Adam on the drawn pictures until they are all learned (a few epochs)."""
    torch.manual_seed(0)
    images, labels = data_set(per_label=150, seed=0)
    model = tiny_cnn()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    accuracy, epochs = 0.0, 0
    while accuracy < 1.0 and epochs < max_epochs:
        epochs += 1
        for batch in torch.randperm(len(images)).split(32):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(images[batch]), labels[batch]).backward()
            optimizer.step()
        with torch.no_grad():
            accuracy = (model(images).argmax(1) == labels).float().mean().item()
    print(f"ant_bee: {accuracy:.0%} of the training pictures right after {epochs} epochs")
    return model.eval()


def main(output: Path) -> None:
    repository = output / "repository"
    shutil.copytree(HERE / "repository", repository, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".gitkeep"))  # fmt: skip
    served = nn.Sequential(train(), nn.Softmax(dim=1)).eval()
    with warnings.catch_warnings():  # torch marks TorchScript deprecated; Triton serves it
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)  # its category from torch 2.14
        torch.jit.script(served).save(str(repository / "ant_bee" / "1" / "model.pt"))

    images = output / "images"
    images.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(2024)  # not the training pictures' seed
    for i in range(SAMPLES):
        for label in LABELS:
            draw(label, rng).save(images / f"{label}_{i}.png")
    print(f"wrote {repository} and {SAMPLES * len(LABELS)} pictures in {images}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "build")
