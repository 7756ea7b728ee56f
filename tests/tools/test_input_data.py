"""perf_analyzer's input-data files as naiad perf and naiad optimize both read them."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

from naiad.core import datatypes
from naiad.tools.input_data import InputDataError, read_streams, tensor

pytestmark = pytest.mark.unit


def test_one_stream_or_several(tmp_path: Path) -> None:
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"data": [{"A": [1]}, {"A": [2]}]}))
    assert [[w for w, _ in s] for s in read_streams(one)] == [[f"{one}: data[0]",
                                                                f"{one}: data[1]"]]  # fmt: skip
    streams = tmp_path / "streams.json"
    streams.write_text(json.dumps({"data": [[{"A": [1]}], [{"A": [2]}, {"A": [3]}]]}))
    found = read_streams(streams)
    assert [len(s) for s in found] == [1, 2]
    assert found[1][1] == (f"{streams}: data[1][1]", {"A": [3]})


def test_every_spelling_of_a_tensor() -> None:
    fp32 = datatypes.FP32
    assert tensor([1, 2, 3, 4], fp32, (2, 2), "w").tolist() == [[1, 2], [3, 4]]
    assert tensor([1, 2, 3, 4], fp32, None, "w").shape == (4,)
    given = {"content": [1, 2, 3, 4], "shape": [4, 1]}
    assert tensor(given, fp32, (2, 2), "w").shape == (4, 1)  # the file's own shape wins
    raw = base64.b64encode(np.arange(3, dtype=np.float32).tobytes()).decode()
    assert tensor({"b64": raw}, fp32, (3,), "w").tolist() == [0, 1, 2]
    words = tensor(["ab", "c"], datatypes.BYTES, (2,), "w")
    assert words.dtype == object and words.tolist() == [b"ab", b"c"]


@pytest.mark.parametrize(
    ("value", "datatype", "message"),
    [
        ([1, 2, 3], datatypes.FP32, r"w: 3 values do not fill shape \[2, 2\]"),
        (["x"], datatypes.INT32, "w: not INT32 values"),
        ({"b64": "YQ=="}, datatypes.BYTES, "b64 content of BYTES inputs is not supported"),
        ({"shape": [2]}, datatypes.FP32, "expected a list, or"),
    ],
)
def test_what_does_not_fit_says_where(value: object, datatype: datatypes.DataType,
                                      message: str) -> None:  # fmt: skip
    with pytest.raises(InputDataError, match=message):
        tensor(value, datatype, (2, 2), "w")


def test_files_that_are_not_input_data(tmp_path: Path) -> None:
    with pytest.raises(InputDataError, match="no such file"):
        read_streams(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(InputDataError, match="not a JSON input-data file"):
        read_streams(bad)
    bad.write_text(json.dumps({"data": []}))
    with pytest.raises(InputDataError, match='expected {"data"'):
        read_streams(bad)
    bad.write_text(json.dumps({"data": [1]}))
    with pytest.raises(InputDataError, match=r"data\[0\] is not an object of inputs"):
        read_streams(bad)
