"""The fast loop stays fast: the ``unit`` extra (pytest -m unit, ruff and mypy; README's
"Tests") brings the test tools and no framework, and ``test`` builds on it rather than
declaring the tools a second time."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]

# The extras that each bring a framework (or a framework-sized integration).
FRAMEWORK_EXTRAS = (
    "torch",
    "openvino",
    "fil",
    "tensorflow",
    "tensorrt",
    "ray",
    "bentoml",
    "gradio",
)


def _extras() -> dict[str, list[Requirement]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    return {name: [Requirement(text) for text in texts] for name, texts in extras.items()}


def _frameworks(extras: dict[str, list[Requirement]]) -> set[str]:
    return {canonicalize_name(req.name) for name in FRAMEWORK_EXTRAS for req in extras[name]}


def _is_framework(name: str, frameworks: set[str]) -> bool:
    """``tensorflow-cpu`` and ``xgboost-cpu`` are the frameworks under another name."""
    name = canonicalize_name(name)
    return any(name == f or name.startswith(f"{f}-") for f in frameworks)


def test_the_framework_extras_are_the_ones_this_test_knows() -> None:
    frameworks = _frameworks(_extras())
    for name in ("torch", "tensorflow", "openvino", "ray", "xgboost", "lightgbm", "treelite",
                 "scikit-learn", "bentoml", "gradio", "tensorrt"):  # fmt: skip
        assert name in frameworks
    assert _is_framework("tensorflow-cpu", frameworks) and _is_framework("xgboost-cpu", frameworks)
    assert not _is_framework("mypy", frameworks) and not _is_framework("onnx", frameworks)


def test_the_unit_extra_brings_no_framework() -> None:
    extras = _extras()
    frameworks = _frameworks(extras)
    heavy = [str(req) for req in extras["unit"] if _is_framework(req.name, frameworks)]
    assert heavy == [], f"the unit extra must stay framework-free; move {heavy} to test"
    assert all(canonicalize_name(req.name) != "naiad" for req in extras["unit"])


def test_the_test_extra_is_the_unit_extra_and_the_rest() -> None:
    extras = _extras()
    own = [req for req in extras["test"] if canonicalize_name(req.name) == "naiad"]
    assert [sorted(req.extras) for req in own] == [["unit"]]
    unit = {canonicalize_name(req.name) for req in extras["unit"]}
    twice = [str(req) for req in extras["test"] if canonicalize_name(req.name) in unit]
    assert twice == [], f"declared in unit already: {twice}"
    frameworks = _frameworks(extras)
    for name in ("torch", "tensorflow-cpu", "openvino", "ray", "xgboost-cpu", "bentoml"):
        assert any(canonicalize_name(req.name) == name for req in extras["test"]), name
        assert _is_framework(name, frameworks)
