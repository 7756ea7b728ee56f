"""Ask the ``sentiment`` ensemble about some texts: ``python client.py [--url URL] [--grpc] TEXT...``.

One request carries all the texts (a batch); the server tokenizes them, runs the
classifier and turns its logits into labels.  Prints ``label<TAB>score<TAB>text``
per text.  Needs ``pip install 'tritonclient[http,grpc]'`` (``naiad[client]``).
"""

from __future__ import annotations

import argparse

import numpy as np


def classify(texts: list[str], url: str, use_grpc: bool) -> list[tuple[str, float]]:
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    client_module = grpcclient if use_grpc else httpclient

    batch = np.array([[text.encode()] for text in texts], dtype=object)
    text = client_module.InferInput("TEXT", list(batch.shape), "BYTES")
    text.set_data_from_numpy(batch)
    client = client_module.InferenceServerClient(url)
    try:
        result = client.infer("sentiment", [text])
    finally:
        client.close()
    labels, scores = result.as_numpy("LABEL").reshape(-1), result.as_numpy("SCORE").reshape(-1)
    return [(label.decode(), float(score)) for label, score in zip(labels, scores, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("texts", nargs="+", metavar="TEXT")
    parser.add_argument("--url", help="host:port (default localhost:8000, or :8001 with --grpc)")
    parser.add_argument("--grpc", action="store_true", help="use gRPC instead of HTTP")
    args = parser.parse_args()
    url = args.url or ("localhost:8001" if args.grpc else "localhost:8000")
    for text, (label, score) in zip(args.texts, classify(args.texts, url, args.grpc), strict=True):
        print(f"{label}\t{score:.4f}\t{text}")


if __name__ == "__main__":
    main()
