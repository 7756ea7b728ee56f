"""Sentence embeddings from a small encoder, written for Triton's Python backend.

Every text of every request in the dynamic batch goes through one forward pass
(padded to the longest); each text's vector is the mean of its tokens' last
hidden states (padding left out) scaled to length 1, so a dot product of two
vectors is their cosine similarity.
"""

from pathlib import Path

import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer
from transformers.utils import logging

import triton_python_backend_utils as pb_utils


def embed(model, tokenizer, texts, max_length=512):
    """Unit-length mean-pooled vectors for ``texts`` (a list of str), as float32 numpy.

    Each text starts with the beginning-of-sequence token, so an empty text has a
    token to average too.
    """
    rows = [
        [tokenizer.bos_token_id] + tokenizer.encode(t, add_special_tokens=False)[: max_length - 1]
        for t in texts
    ]
    width = max(len(r) for r in rows)
    ids = torch.tensor([r + [tokenizer.pad_token_id] * (width - len(r)) for r in rows])
    mask = (torch.arange(width) < torch.tensor([[len(r)] for r in rows])).long()
    with torch.inference_mode():
        hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        mean = (hidden * weights).sum(dim=1) / weights.sum(dim=1)
        return torch.nn.functional.normalize(mean, dim=-1).numpy()


class TritonPythonModel:
    def initialize(self, args):
        folder = Path(args["model_repository"])
        torch.set_num_threads(1)  # 64-wide matrices: more threads cost more than they give
        logging.disable_progress_bar()  # no "Loading weights" bar in the server's log
        self.tokenizer = AutoTokenizer.from_pretrained(folder / "tokenizer")
        weights = folder / args["model_version"]
        # the encoder alone: BERT's pooler (for classification) is neither saved nor used
        self.model = AutoModel.from_pretrained(weights, add_pooling_layer=False).eval()

    def execute(self, requests):
        # Each request holds [b, 1] strings (b is 1 for most clients).
        texts = [pb_utils.get_input_tensor_by_name(r, "text_input").as_numpy() for r in requests]
        flat = [t.decode("utf-8", errors="replace") for x in texts for t in x.reshape(-1)]
        if flat:
            vectors = embed(self.model, self.tokenizer, flat)
        else:
            vectors = np.zeros((0, self.model.config.hidden_size), np.float32)
        ends = np.cumsum([x.shape[0] for x in texts])[:-1]
        return [
            pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("embedding", part)])
            for part in np.split(vectors, ends)
        ]
