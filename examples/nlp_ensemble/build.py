"""Build the sentiment ensemble's repository: ``python build.py [OUTPUT_DIR]``.

Copies ``repository/`` (configs, the tokenizer and postprocess Python models,
the vocabulary) to ``OUTPUT_DIR/repository`` (default: ``build/`` beside this
file) and writes the classifier into it: a tiny PyTorch model trained for a
moment on the sentences below, exported to ONNX, so serving needs no PyTorch.
Needs ``torch`` and ``onnx`` (``pip install torch onnx``).
"""

from __future__ import annotations

import shutil
import sys
import warnings
from pathlib import Path
from types import ModuleType

import torch
from torch import nn

HERE = Path(__file__).resolve().parent
SKELETON = HERE / "repository"

POSITIVE = [
    "I love this movie, it was wonderful",
    "what a great and happy day",
    "the food was excellent and the staff were friendly",
    "an amazing, beautiful story",
    "I really enjoyed the show",
    "best purchase ever, works perfectly",
    "the service was fast and helpful",
    "a fantastic experience, highly recommended",
    "this is good, I like it a lot",
    "the hotel was lovely and clean",
    "brilliant acting and a delightful plot",
    "I am so pleased with the result",
    "nice people and a pleasant place",
    "the book was fun and interesting",
    "superb quality, I would buy it again",
    "everything was perfect, thank you",
    "awesome music and great friends",
    "it made me smile, a charming film",
]
NEGATIVE = [
    "I hate this movie, it was awful",
    "what a terrible and sad day",
    "the food was bad and the staff were rude",
    "a boring, ugly story",
    "I really disliked the show",
    "worst purchase ever, it broke at once",
    "the service was slow and useless",
    "a horrible experience, do not recommend",
    "this is poor, I dislike it a lot",
    "the hotel was dirty and noisy",
    "dreadful acting and a stupid plot",
    "I am so disappointed with the result",
    "mean people and an unpleasant place",
    "the book was dull and tedious",
    "cheap quality, I would never buy it again",
    "everything was wrong, what a waste",
    "annoying music and angry neighbours",
    "it made me cry, a miserable film",
]


class Classifier(nn.Module):
    """Mean of the real tokens' embeddings -> a linear layer: two logits (negative, positive)."""

    def __init__(self, vocabulary_size: int, width: int = 16) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocabulary_size, width)
        self.linear = nn.Linear(width, 2)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        mask = attention_mask.unsqueeze(-1).to(torch.float32)
        summed = (self.embedding(input_ids) * mask).sum(dim=1)
        return self.linear(summed / mask.sum(dim=1).clamp(min=1.0))


def tokenizer_module(repository: Path) -> ModuleType:
    """The tokenizer's own model.py, so training sees exactly what serving does."""
    import importlib.util

    path = repository / "tokenizer" / "1" / "model.py"
    spec = importlib.util.spec_from_file_location("sentiment_tokenizer", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def train(repository: Path) -> Classifier:
    tokenizer = tokenizer_module(repository)
    vocabulary = tokenizer.load_vocabulary(repository / "tokenizer" / "1" / "vocab.txt")
    ids, mask = tokenizer.tokenize(POSITIVE + NEGATIVE, vocabulary)
    labels = torch.tensor([1] * len(POSITIVE) + [0] * len(NEGATIVE))
    ids_t, mask_t = torch.from_numpy(ids), torch.from_numpy(mask)
    torch.manual_seed(0)
    model = Classifier(len(vocabulary))
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.02, weight_decay=0.1)
    for _ in range(120):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(ids_t, mask_t), labels)
        loss.backward()
        optimizer.step()
    accuracy = (model(ids_t, mask_t).argmax(1) == labels).float().mean().item()
    print(f"classifier: loss {loss.item():.3f}, {accuracy:.0%} of the training sentences right")
    return model.eval()


def export(model: Classifier, path: Path) -> None:
    example = (torch.ones(1, 16, dtype=torch.int64), torch.ones(1, 16, dtype=torch.int64))
    batch = {0: "batch"}
    with warnings.catch_warnings():  # the TorchScript-based exporter is deprecated, not gone
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            model,
            example,
            str(path),
            input_names=["INPUT_IDS", "ATTENTION_MASK"],
            output_names=["LOGITS"],
            dynamic_axes={"INPUT_IDS": batch, "ATTENTION_MASK": batch, "LOGITS": batch},
            opset_version=17,
            dynamo=False,  # the TorchScript-based exporter: no onnxscript needed
        )


def main(output: Path) -> Path:
    repository = output / "repository"
    shutil.copytree(SKELETON, repository, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
        "__pycache__", ".gitkeep"))  # fmt: skip
    export(train(repository), repository / "classifier" / "1" / "model.onnx")
    print(f"wrote {repository}")
    return repository


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "build")
