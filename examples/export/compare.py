"""Ask the exports of one model the same question: ``python compare.py [--url URL] [MODEL...]``.

Sends one batch of random features to ``net_torch_python`` (eager PyTorch),
``net_torchscript`` and ``net_onnx`` (or the models named; the first is the
reference) over HTTP, prints each answer's largest absolute difference from the
reference's, and exits with status 1 if any is not ``numpy.allclose`` to it.  Needs ``pip install 'tritonclient[http]'``.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import tritonclient.http as httpclient

MODELS = ["net_torch_python", "net_torchscript", "net_onnx"]


def ask(client: httpclient.InferenceServerClient, model: str, batch: np.ndarray) -> np.ndarray:
    features = httpclient.InferInput("INPUT__0", list(batch.shape), "FP32")
    features.set_data_from_numpy(batch)
    return client.infer(model, [features]).as_numpy("OUTPUT__0")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", default=MODELS, metavar="MODEL")
    parser.add_argument("--url", default="localhost:8000", help="naiad's HTTP host:port")
    parser.add_argument("--batch", type=int, default=4, help="rows in the batch (1 to 8)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    batch = np.random.default_rng(args.seed).standard_normal((args.batch, 8)).astype(np.float32)

    client = httpclient.InferenceServerClient(args.url)
    try:
        answers = {model: ask(client, model, batch) for model in args.models}
    finally:
        client.close()
    first, *others = args.models
    reference = answers[first]
    print(f"{first}: argmax {reference.argmax(axis=1).tolist()}")
    agree = True
    for model in others:
        close = np.allclose(answers[model], reference, rtol=1e-5, atol=1e-6)
        difference = float(np.abs(answers[model] - reference).max())
        print(f"{model}: max abs diff {difference:.3g} -> {'agrees' if close else 'DIFFERS'}")
        agree &= close
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
