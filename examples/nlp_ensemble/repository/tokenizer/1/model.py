"""Tokenizer: lower-cased words -> ids of ``vocab.txt`` (one word a line, id = line number).

Unknown words become ``[UNK]``; every text is cut or padded to ``LENGTH`` tokens
with ``[PAD]`` (id 0), and the mask says which tokens are real.  ``tokenize`` is a
plain function so the example's tests (and you) can run this step without a server.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

import triton_python_backend_utils as pb_utils

LENGTH = 16
WORD = re.compile(r"[a-z']+")


def load_vocabulary(path: Path) -> dict[str, int]:
    words = path.read_text(encoding="utf-8").split()
    return {word: index for index, word in enumerate(words)}


def tokenize(texts: list[str], vocabulary: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids and attention masks, both INT64 ``[len(texts), LENGTH]``."""
    unknown = vocabulary["[UNK]"]
    ids = np.full((len(texts), LENGTH), vocabulary["[PAD]"], dtype=np.int64)
    mask = np.zeros((len(texts), LENGTH), dtype=np.int64)
    for row, text in enumerate(texts):
        tokens = [vocabulary.get(w, unknown) for w in WORD.findall(text.lower())][:LENGTH]
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    return ids, mask


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        self.vocabulary = load_vocabulary(Path(__file__).with_name("vocab.txt"))

    def execute(self, requests: list) -> list:
        responses = []
        for request in requests:
            text = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy()  # [n, 1] bytes
            texts = [item.decode("utf-8", errors="replace") for item in text.reshape(-1)]
            ids, mask = tokenize(texts, self.vocabulary)
            outputs = [pb_utils.Tensor("INPUT_IDS", ids), pb_utils.Tensor("ATTENTION_MASK", mask)]
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
