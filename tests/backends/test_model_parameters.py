"""Model parameters as every framework backend reads them: one vocabulary, one wording."""

from __future__ import annotations

import pytest

from naiad.backends.parameters import ModelParameters
from naiad.config import ModelConfig
from naiad.core.errors import InvalidArgument

pytestmark = pytest.mark.unit


def _params(**values: str) -> ModelParameters:
    config = ModelConfig(name="m")
    for key, value in values.items():
        config.parameters[key].string_value = value
    return ModelParameters(config)


@pytest.mark.parametrize("text", ["true", "YES", " On ", "1"])
def test_flags_read_every_spelling_of_true(text: str) -> None:
    assert _params(F=text).flag("F") is True


@pytest.mark.parametrize("text", ["false", "No", "OFF", "0"])
def test_flags_read_every_spelling_of_false(text: str) -> None:
    assert _params(F=text).flag("F") is False


def test_absent_and_empty_values_are_none() -> None:
    params = _params(EMPTY="  ")
    assert "EMPTY" not in params
    for read in (params.flag, params.count, params.integer, params.number):
        assert read("EMPTY") is None and read("MISSING") is None
    assert params.choice("EMPTY", ("A",)) is None
    assert params.get("EMPTY", "fallback") == "fallback"


def test_values_are_typed() -> None:
    params = _params(C="8", I="-1", N="0.25", H="throughput")
    assert params.count("C") == 8
    assert params.integer("I") == -1
    assert params.number("N") == 0.25
    assert params.choice("H", ("LATENCY", "THROUGHPUT")) == "THROUGHPUT"


@pytest.mark.parametrize(
    ("read", "value", "expected"),
    [
        ("flag", "maybe", "true or false (yes/no, on/off, 1/0)"),
        ("count", "-1", "a whole number (0 or more)"),
        ("integer", "two", "an integer"),
        ("number", "half", "a number"),
    ],
)
def test_a_bad_value_names_the_model_the_parameter_and_what_it_takes(
    read: str, value: str, expected: str
) -> None:
    with pytest.raises(InvalidArgument) as caught:
        getattr(_params(P=value), read)("P")
    assert str(caught.value).endswith(f"model 'm': parameter 'P' must be {expected}, got '{value}'")


def test_a_choice_lists_what_it_takes() -> None:
    with pytest.raises(InvalidArgument, match="must be one of LATENCY/THROUGHPUT, got 'fast'"):
        _params(H="fast").choice("H", ("LATENCY", "THROUGHPUT"))
