"""naiad.Runner in a plain script: ``python examples/runner/quickstart.py [embedded|grpc|http]``.

The same lines run the models in this process (embedded, the default), or in
a naiad server started as a child process and reached over gRPC or HTTP.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

import naiad

REPOSITORY = Path(__file__).resolve().parents[1] / "model_repository"
DIGITS = Path(__file__).resolve().parent / "digits.json"

server_type = sys.argv[1] if len(sys.argv) > 1 else "embedded"
runner = naiad.Runner("quickstart", model_repository=REPOSITORY, server_type=server_type)

with runner:
    # positional inputs follow config.pbtxt; keywords use the input names
    result = runner.add_sub.run(np.array([1, 2, 3, 4], np.float32), INPUT1=[10, 20, 30, 40])
    print("add_sub:", result["OUTPUT0"], result["OUTPUT1"])

    print("string_upper:", runner.string_upper.run(["naiad", "runner"])["UPPER"])

    # a decoupled model answers several times
    for answer in runner.repeat.stream(IN=[7, 8, 9]):
        print("repeat:", answer["OUT"][0], "at", answer["IDX"][0])

    # Triton's classification extension: the top three classes of a batch of two
    digits = json.loads(DIGITS.read_text())
    images = np.array([digits["3"], digits["7"]], np.float32) / 16  # ink 0-16 -> 0-1
    top = runner.image_classifier.options(outputs={"PROBABILITIES": 3}).run(images)
    print("image_classifier:", naiad.runner.classifications(top["PROBABILITIES"]))

    print("models:", [row["name"] for row in runner.get_model_repository_index()])
    stats = runner.get_inference_statistics("add_sub")["model_stats"][0]
    print("add_sub requests:", stats["inference_stats"]["success"]["count"])
