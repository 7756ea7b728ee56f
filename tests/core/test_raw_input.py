"""A raw binary request's single input gets the one shape the model allows (rest.md §5.4)."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf import text_format

from naiad.config import model_config_pb2 as pb
from naiad.core import datatypes
from naiad.core.errors import InvalidArgument
from naiad.core.raw_input import raw_input
from naiad.core.signature import Signature

pytestmark = pytest.mark.unit


def signature(batch: int, inputs: str) -> Signature:
    return Signature(
        text_format.Parse(f"max_batch_size: {batch}\ninput [{inputs}]", pb.ModelConfig())
    )


def fp32(dims: str) -> str:
    return f'{{ name: "IN" data_type: TYPE_FP32 dims: {dims} }}'


def test_fixed_dims_without_batching() -> None:
    data = np.arange(4, dtype=np.float32).tobytes()
    tensor = raw_input("m", signature(0, fp32("[4]")), data)
    assert (tensor.name, tensor.datatype, tensor.shape) == ("IN", datatypes.FP32, (4,))
    assert bytes(tensor.data) == data  # type: ignore[arg-type]


def test_batching_models_get_a_batch_of_one() -> None:
    assert raw_input("m", signature(8, fp32("[2, 2]")), bytes(16)).shape == (1, 2, 2)


def test_the_variable_dim_takes_what_the_bytes_leave() -> None:
    assert raw_input("m", signature(8, fp32("[-1, 2]")), bytes(24)).shape == (1, 3, 2)
    assert raw_input("m", signature(0, fp32("[-1]")), b"").shape == (0,)


def test_refusals() -> None:
    two = fp32("[4]") + ', { name: "B" data_type: TYPE_FP32 dims: [4] }'
    with pytest.raises(InvalidArgument, match="got 2 inputs in 'm' model configuration"):
        raw_input("m", signature(0, two), bytes(16))
    with pytest.raises(InvalidArgument, match="more than one variable dimension"):
        raw_input("m", signature(0, fp32("[-1, -1]")), bytes(16))
    with pytest.raises(InvalidArgument, match="Raw request of 5 bytes does not fit input 'IN'"):
        raw_input("m", signature(0, fp32("[-1]")), bytes(5))
    text = '{ name: "T" data_type: TYPE_STRING dims: [-1] }'
    with pytest.raises(InvalidArgument, match="BYTES input 'T' requires dims \\[1\\]"):
        raw_input("m", signature(0, text), b"\x01\x00\x00\x00a")


def test_bytes_inputs_with_dims_one() -> None:
    text = '{ name: "T" data_type: TYPE_STRING dims: [1] }'
    tensor = raw_input("m", signature(4, text), b"\x01\x00\x00\x00a")
    assert (tensor.datatype, tensor.shape) == (datatypes.BYTES, (1, 1))
