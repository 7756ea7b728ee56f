"""Send a picture (raw HTTP JSON with base64, then tritonclient's binary bytes) and a
pandas DataFrame (as MLServer's client sends it) to `naiad serve repository/`.

    python client.py [--url localhost:8000]
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import urllib.request

import numpy as np
import pandas as pd
import tritonclient.http as httpclient
from PIL import Image, ImageDraw


def picture() -> bytes:
    """A 64 x 48 PNG, mostly blue with a red disc."""
    img = Image.new("RGB", (64, 48), (30, 60, 200))
    ImageDraw.Draw(img).ellipse((8, 8, 30, 30), fill=(220, 20, 20))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def post(url: str, model: str, doc: dict) -> dict:
    req = urllib.request.Request(
        f"http://{url}/v2/models/{model}/infer",
        json.dumps(doc).encode(),
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req) as resp:
        return json.loads(resp.read())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="localhost:8000")
    url = parser.parse_args().url
    png = picture()

    # 1. JSON: the file as base64; the JSON output comes back as an object
    doc = {"inputs": [{"name": "IMAGE", "datatype": "BYTES", "shape": [1],
                       "data": [base64.b64encode(png).decode()]}]}  # fmt: skip
    stats = post(url, "image_stats", doc)["outputs"][0]["data"][0]
    print("image_stats (JSON):", stats)

    # 2. tritonclient: the file's bytes over the binary extension
    client = httpclient.InferenceServerClient(url)
    image = httpclient.InferInput("IMAGE", [1], "BYTES")
    image.set_data_from_numpy(np.array([png], dtype=np.object_))
    raw = client.infer("image_stats", [image]).as_numpy("STATS")[0][0]
    print("image_stats (tritonclient):", json.loads(raw))
    client.close()

    # 3. a data frame, one input per column, as mlserver.codecs.PandasCodec writes it
    frame = pd.DataFrame({"price": [2.5, 10.0, 4.0], "quantity": [4, 1, 3]})
    doc = {"parameters": {"content_type": "pd"}, "inputs": [
        {"name": "price", "datatype": "FP64", "shape": [3, 1], "data": frame["price"].tolist()},
        {"name": "quantity", "datatype": "INT64", "shape": [3, 1],
         "data": frame["quantity"].tolist()}]}  # fmt: skip
    totals = post(url, "frame_sum", doc)["outputs"][0]["data"]
    print("frame_sum:", totals)


if __name__ == "__main__":
    main()
