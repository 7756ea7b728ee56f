import numpy as np
import pytest

from naiad.core import datatypes
from naiad.core.errors import InvalidArgument

pytestmark = pytest.mark.unit


def test_every_datatype_has_consistent_names():
    assert [dt.name for dt in datatypes.ALL] == [
        "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64",
        "FP16", "FP32", "FP64", "BYTES", "BF16",
    ]  # fmt: skip
    for dt in datatypes.ALL:
        assert datatypes.from_name(dt.name) is dt
        assert datatypes.from_config(dt.config_enum) is dt
        if not dt.is_bytes:
            assert dt.numpy.itemsize == dt.itemsize
    assert datatypes.BYTES.config_name == "TYPE_STRING"
    assert datatypes.FP32.config_name == "TYPE_FP32"


def test_unknown_datatype_is_invalid_arg():
    with pytest.raises(InvalidArgument, match="invalid datatype 'FLOAT'"):
        datatypes.from_name("FLOAT")


def test_from_numpy_maps_strings_to_bytes():
    assert datatypes.from_numpy(np.dtype(np.float32)) is datatypes.FP32
    assert datatypes.from_numpy(np.dtype("S5")) is datatypes.BYTES
    assert datatypes.from_numpy(np.dtype(object)) is datatypes.BYTES


def test_bytes_round_trip_matches_tritonclient_encoding():
    from tritonclient.utils import serialize_byte_tensor

    values = np.array([b"", b"abc", "h\u00e9".encode(), b"\x00\xff"], dtype=object)
    encoded = datatypes.serialize_bytes(values)
    assert encoded == serialize_byte_tensor(values).item()
    decoded = datatypes.deserialize_bytes(encoded, 4)
    assert decoded.tolist() == values.tolist()


@pytest.mark.parametrize(
    ("buffer", "message"),
    [
        (b"\x05\x00", "incomplete string length indicator"),
        (b"\x05\x00\x00\x00ab", "incomplete string data"),
    ],
)
def test_bytes_truncated_buffers_are_errors(buffer, message):
    with pytest.raises(InvalidArgument, match=message):
        datatypes.deserialize_bytes(buffer)


def test_bytes_element_count_checked():
    with pytest.raises(InvalidArgument, match="expected 2 string elements, got 1"):
        datatypes.deserialize_bytes(b"\x01\x00\x00\x00a", 2)
