"""The ant/bee classifier in your own program, with no server: ``python runner_app.py REPOSITORY IMAGE...``.

``naiad.Runner`` loads the repository that build.py wrote into this process
(add ``--server-type grpc`` or ``http`` to run it in a child ``naiad serve``
instead); Pillow preprocesses the pictures here, and the model's probabilities
become labels with ``labels.txt``.  Prints ``IMAGE<TAB>label<TAB>score`` per
picture, as client.py does.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from preprocess import preprocess

import naiad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("repository", type=Path, help="build.py's OUTPUT_DIR/repository")
    parser.add_argument("images", nargs="+", type=Path, metavar="IMAGE")
    parser.add_argument("--server-type", default="embedded", choices=["embedded", "grpc", "http"])
    args = parser.parse_args()
    labels = (args.repository / "ant_bee" / "labels.txt").read_text().split()

    with naiad.Runner("ant-bee", model_repository=args.repository,
                      server_type=args.server_type) as runner:  # fmt: skip
        batch = np.stack([preprocess(path) for path in args.images])
        probabilities = runner.ant_bee.run(batch)["OUTPUT__0"]
    for path, row in zip(args.images, probabilities, strict=True):
        best = int(row.argmax())
        print(f"{path}\t{labels[best]}\t{row[best]:.4f}")


if __name__ == "__main__":
    main()
