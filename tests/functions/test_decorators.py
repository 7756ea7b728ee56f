"""What ``@naiad.model`` reads from a function, and what it refuses, naming the function."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from numpy.typing import NDArray

import naiad
from naiad.config import model_config_pb2
from naiad.functions import SpecError
from naiad.functions.export import config_of

pytestmark = pytest.mark.unit


def test_signature_from_annotations() -> None:
    @naiad.model
    def f(x: NDArray[np.float32], label: str, k: int) -> tuple[NDArray[np.int64], str]:
        raise NotImplementedError

    assert [(t.name, t.datatype, list(t.shape), t.scalar) for t in f.inputs] == [
        ("x", "FP32", [-1], False), ("label", "BYTES", [1], True), ("k", "INT64", [1], True),
    ]  # fmt: skip
    assert [(t.name, t.datatype) for t in f.outputs] == [
        ("output_0", "INT64"),
        ("output_1", "BYTES"),
    ]
    assert not f.decoupled and not f.batched and f.max_batch_size == 0


def test_batch_generators_and_config() -> None:
    @naiad.model(max_queue_delay_us=100, instances=2, content_types={"img": "image"})
    @naiad.batch
    def g(img: NDArray[np.uint8]) -> Iterator[NDArray[np.float32]]:
        yield img.astype(np.float32)

    assert g.batched and g.decoupled and g.max_batch_size == 16
    config = config_of(g)
    assert config.max_batch_size == 16 and config.model_transaction_policy.decoupled
    assert config.dynamic_batching.max_queue_delay_microseconds == 100
    assert config.instance_group[0].count == 2
    assert config.parameters["naiad.content_type.img"].string_value == "image"
    assert config.input[0].data_type == model_config_pb2.TYPE_UINT8
    assert g(np.ones(2, np.uint8)).__next__().dtype == np.float32  # still plain Python


@pytest.mark.parametrize(
    ("declare", "words"),
    [
        (lambda: naiad.model(lambda x: x), "no annotation"),
        (lambda: naiad.model(name="a b", inputs={"x": np.float32}, outputs={"y": np.float32})(
            lambda x: x), "not a model name"),
        (lambda: naiad.model(max_batch_size=0)(naiad.batch(_typed)), "needs max_batch_size"),
        (lambda: naiad.model(name="m", inputs={"x": object()}, outputs={"y": np.float32})(
            lambda x: x), "no Triton datatype"),
        (lambda: naiad.model(name="m", inputs={"x": np.float32}, outputs={"y": np.float32},
                             content_types={"z": "image"})(lambda x: x), "names 'z'"),
        (lambda: naiad.model(_untyped_return), "no return annotation"),
    ],
)  # fmt: skip
def test_refusals_name_the_function(declare: object, words: str) -> None:
    with pytest.raises(SpecError, match=words):
        declare()  # type: ignore[operator]


def _typed(x: NDArray[np.float32]) -> NDArray[np.float32]:
    return x


def _untyped_return(x: NDArray[np.float32]):  # type: ignore[no-untyped-def]
    return x
