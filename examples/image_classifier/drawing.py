"""Pictures of ants and bees, drawn with Pillow: the example's whole data set.

A bee is a yellow body with black stripes and pale wings; an ant is three dark
round segments in a row with thin legs.  Each picture varies the background,
size, place and angle, so a tiny CNN must learn the insects, not one picture.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

LABELS = ["ant", "bee"]
SIZE = 64


def draw(label: str, rng: np.random.Generator) -> Image.Image:
    """One 64x64 RGB picture of an ``"ant"`` or a ``"bee"``."""
    ground = tuple(int(c) for c in rng.integers([90, 120, 60], [200, 220, 150]))
    background = Image.new("RGB", (SIZE * 2, SIZE * 2), ground)
    insect = Image.new("RGBA", (SIZE * 2, SIZE * 2), (0, 0, 0, 0))
    scale = rng.uniform(0.7, 1.2)
    (_bee if label == "bee" else _ant)(ImageDraw.Draw(insect), scale, rng)
    insect = insect.rotate(rng.uniform(0, 360), resample=Image.BILINEAR)
    shift = tuple(int(s) for s in rng.integers(-20, 21, size=2))
    background.paste(insect, shift, insect)
    noise = rng.normal(0, 8, (SIZE * 2, SIZE * 2, 3))
    pixels = np.clip(np.asarray(background, np.float32) + noise, 0, 255).astype(np.uint8)
    picture = Image.fromarray(pixels).filter(ImageFilter.GaussianBlur(0.6))
    return picture.resize((SIZE, SIZE), Image.BILINEAR)


def _bee(pen: ImageDraw.ImageDraw, scale: float, rng: np.random.Generator) -> None:
    cx, cy, half_w, half_h = SIZE, SIZE, 30 * scale, 17 * scale
    for side in (-1, 1):  # wings
        pen.ellipse([cx - 12 * scale, cy + side * 14 * scale - 12 * scale,
                     cx + 12 * scale, cy + side * 14 * scale + 12 * scale],
                    fill=(225, 235, 245, 170))  # fmt: skip
    yellow = tuple(int(c) for c in rng.integers([220, 170, 0], [256, 215, 60]))
    pen.ellipse([cx - half_w, cy - half_h, cx + half_w, cy + half_h], fill=(*yellow, 255))
    stripes = int(rng.integers(3, 5))
    width = 2 * half_w / (2 * stripes + 1)
    for i in range(stripes):
        x = cx - half_w + width * (2 * i + 1)
        inset = half_h * (1 - ((x + width / 2 - cx) / half_w) ** 2) ** 0.5
        pen.rectangle([x, cy - inset, x + width, cy + inset], fill=(20, 15, 10, 255))


def _ant(pen: ImageDraw.ImageDraw, scale: float, rng: np.random.Generator) -> None:
    dark = tuple(int(c) for c in rng.integers([10, 5, 0], [90, 40, 30]))
    cx, cy = SIZE, SIZE
    for dx in (-22, -4, 16):  # legs from the middle segment
        for side in (-1, 1):
            pen.line([cx - 4 * scale, cy, cx + dx * scale, cy + side * 22 * scale],
                     fill=(*dark, 255), width=2)  # fmt: skip
    for x, r in ((-24, 8), (-6, 7), (16, 12)):  # head, thorax, abdomen
        pen.ellipse([cx + (x - r) * scale, cy - r * scale * 0.85,
                     cx + (x + r) * scale, cy + r * scale * 0.85], fill=(*dark, 255))  # fmt: skip
