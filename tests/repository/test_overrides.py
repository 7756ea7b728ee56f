"""Model files sent with a load request: an error names the file it is about."""

from __future__ import annotations

import pytest

from naiad.core.errors import InvalidArgument
from naiad.repository.overrides import write_model_files

pytestmark = pytest.mark.unit


def test_a_path_given_twice_is_named() -> None:
    files = {"file:1/model.py": b"a", "1/model.py": b"b", "1/labels.txt": b"c"}
    with pytest.raises(InvalidArgument, match="file path '1/model.py' is given more than once"):
        write_model_files("m", files)
