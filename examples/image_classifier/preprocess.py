"""An image file -> the model's input: RGB, 64x64, scaled to [0, 1], ImageNet-normalised, CHW.

build.py trains on exactly this, and client.py and runner_app.py send it, so the
three agree on what the model sees.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

SIZE = 64
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def preprocess(image: Image.Image | str | Path) -> np.ndarray:
    """FP32 ``[3, 64, 64]``."""
    if not isinstance(image, Image.Image):
        with Image.open(image) as opened:
            image = opened.convert("RGB")
    pixels = np.asarray(image.convert("RGB").resize((SIZE, SIZE), Image.BILINEAR), np.float32)
    return ((pixels / 255.0 - MEAN) / STD).transpose(2, 0, 1).copy()
