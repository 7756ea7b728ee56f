"""The "image" content type: JPEG, PNG (any format Pillow reads) bytes to the model's tensor.

Each element of a BYTES input is one picture's file (raw bytes over the binary
extension, base64 or a ``data:`` URL in JSON).  Pillow decodes it, converts it
to the declared colour mode, resizes it (bilinear) to the declared height and
width and lays it out channels-last (H, W, C) or channels-first (C, H, W), as
UINT8 or as floats (divided by 255 with ``scale``).
"""

from __future__ import annotations

import io

import numpy as np

from naiad.frontends.http.content_types.plan import ImageOptions
from naiad.frontends.http.content_types.values import bad

#: Pictures larger than this many pixels are refused (Pillow's own guard is twice it).
MAX_PIXELS = 89_478_485


def decode_images(name: str, files: list[bytes], options: ImageOptions) -> np.ndarray:
    """One array ``[N, ...]`` for ``N`` files, each laid out as ``options`` says."""
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - the "content" extra
        raise bad(name, "decoding images needs Pillow: pip install 'naiad[content]'") from None
    pictures = []
    for i, data in enumerate(files):
        try:
            with Image.open(io.BytesIO(data)) as img:
                width, height = img.size
                if width * height > MAX_PIXELS:
                    raise bad(name, f"image {i} has {width}x{height} pixels, over {MAX_PIXELS}")
                img = img.convert(options.mode)
                size = (options.width or width, options.height or height)
                if img.size != size:
                    img = img.resize(size, Image.Resampling.BILINEAR)
                array = np.asarray(img)
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
            raise bad(name, f"element {i} is not an image Pillow can read ({exc})") from None
        if array.ndim == 2 and options.channels:
            array = array[:, :, None]
        pictures.append(array)
    if len({p.shape for p in pictures}) > 1:
        raise bad(name, "the images have different sizes and the input declares none")
    batch = np.stack(pictures)
    if options.channels_first and batch.ndim == 4:
        batch = batch.transpose(0, 3, 1, 2)
    if options.dtype != np.uint8:
        batch = batch.astype(options.dtype)
        if options.scale:
            batch /= 255
    return np.ascontiguousarray(batch)
