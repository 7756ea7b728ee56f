"""Load and unload parameters mean what Triton says; their typing is the reader's."""

from __future__ import annotations

from typing import Any, NoReturn

import pytest

from naiad.core.errors import InvalidArgument
from naiad.engine.repository_parameters import load_parameters, unload_dependents

pytestmark = pytest.mark.unit


class Plain:
    def config(self, key: str, value: Any) -> str:
        return str(value)

    def file(self, key: str, value: Any) -> bytes:
        return bytes(value)

    def unknown(self, key: str, value: Any) -> NoReturn:
        raise InvalidArgument(f"unknown '{key}'")


def test_config_and_files() -> None:
    params = {"config": "{}", "file:1/model.onnx": b"\x01", "file:labels.txt": b"a"}
    config, files = load_parameters(params, Plain())
    assert config == "{}"
    assert files == {"1/model.onnx": b"\x01", "labels.txt": b"a"}


def test_nothing_means_the_repository_as_it_is() -> None:
    assert load_parameters({}, Plain()) == (None, None)


def test_unknown_keys_are_the_readers_to_refuse() -> None:
    with pytest.raises(InvalidArgument, match="unknown 'x'"):
        load_parameters({"x": "1"}, Plain())


def test_unload_dependents() -> None:
    def flag(key: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise InvalidArgument(f"'{key}' is no flag")
        return value

    assert unload_dependents({}, flag) is False
    assert unload_dependents({"other": 1, "unload_dependents": True}, flag) is True
    with pytest.raises(InvalidArgument, match="'unload_dependents' is no flag"):
        unload_dependents({"unload_dependents": None}, flag)  # present, even if null
