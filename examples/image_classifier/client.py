"""Classify pictures with the ``ant_bee`` model over HTTP: ``python client.py [--url URL] IMAGE...``.

Each picture is preprocessed here (preprocess.py, with Pillow) and sent as one
row of a batch; Triton's classification extension (``class_count``) makes the
server answer ``score:index:label`` from the model's ``labels.txt``.  Prints
``IMAGE<TAB>label<TAB>score`` per picture.  Needs ``pip install 'tritonclient[http]' pillow``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import tritonclient.http as httpclient
from preprocess import preprocess


def classify(paths: list[Path], url: str) -> list[tuple[str, float]]:
    batch = np.stack([preprocess(path) for path in paths])
    image = httpclient.InferInput("INPUT__0", list(batch.shape), "FP32")
    image.set_data_from_numpy(batch)
    best = httpclient.InferRequestedOutput("OUTPUT__0", class_count=1)
    client = httpclient.InferenceServerClient(url)
    try:
        result = client.infer("ant_bee", [image], outputs=[best])
    finally:
        client.close()
    answers = []
    for row in result.as_numpy("OUTPUT__0").reshape(-1):  # b"0.98:1:bee"
        score, _, label = row.decode().split(":", 2)
        answers.append((label, float(score)))
    return answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("images", nargs="+", type=Path, metavar="IMAGE")
    parser.add_argument("--url", default="localhost:8000", help="naiad's HTTP host:port")
    args = parser.parse_args()
    for path, (label, score) in zip(args.images, classify(args.images, args.url), strict=True):
        print(f"{path}\t{label}\t{score:.4f}")


if __name__ == "__main__":
    main()
