"""Golden case files collected by pytest: one test per case file and protocol.

A failure shows what ``naiad test`` prints for the case (which request, which
output, where it differs), not a traceback into naiad.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from naiad.testing.choices import configured_repository, protocols, server_for


class GoldenCase(pytest.File):
    """``<repo>/<model>/tests/<case>.json``: a test for each protocol asked for."""

    def collect(self) -> Iterable[pytest.Item]:
        for protocol in protocols(self.config):
            yield GoldenRun.from_parent(self, name=protocol, protocol=protocol)


class GoldenRun(pytest.Item):
    def __init__(self, *, protocol: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.protocol = protocol

    def runtest(self) -> None:
        repository = configured_repository(self.config)
        assert repository is not None  # collected only when one is configured
        server_for(self.config, repository).check(Path(self.path).resolve(), self.protocol)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, AssertionError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"golden case {self.path.name} [{self.protocol}]"
