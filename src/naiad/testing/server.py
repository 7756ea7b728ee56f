"""A started server over a repository, as the ``naiad_server`` fixture hands it to a test.

The same session ``naiad test`` runs (:mod:`naiad.tools.golden.session`): the
models in this process, HTTP and gRPC on free loopback ports, and the golden
cases judged exactly as the command judges them.  Its loop runs on a thread of
its own, so synchronous tests call it directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from naiad.loop_thread import LoopThread
from naiad.server import Server
from naiad.tools.golden import cases
from naiad.tools.golden.cases import CaseError
from naiad.tools.golden.session import PROTOCOLS, Session


class NaiadServer:
    """A repository served in-process and on ``127.0.0.1`` (HTTP and gRPC, free ports).

    ``infer(model, inputs)`` calls a model with no network; ``http_url`` and
    ``grpc_url`` are what ``tritonclient`` takes; ``check(case)`` runs one golden
    case and fails the test with what differs.
    """

    def __init__(self, repository: str | Path, timeout: float = 120.0) -> None:
        self.repository = Path(repository)
        self._thread = LoopThread("naiad-testing")
        self._session = Session(self.repository, PROTOCOLS, timeout)
        try:
            self._thread.call(self._session.start(connect=False))  # tritonclient: optional
        except BaseException:
            self._thread.call(self._session.close())
            self._thread.close()
            raise

    def __repr__(self) -> str:
        return f"<NaiadServer {self.repository} http={self.http_url} grpc={self.grpc_url}>"

    @property
    def server(self) -> Server:
        return self._session.embedded.server

    @property
    def http_url(self) -> str:
        return f"127.0.0.1:{self.server.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.server.grpc_port}"

    def load_failures(self) -> dict[str, str]:
        """Why each model of the repository that failed to load did."""
        return self._session.load_failures()

    def infer(self, model: str, inputs: Mapping[str, Any], **kwargs: Any) -> dict[str, np.ndarray]:
        """:meth:`naiad.Server.infer`: numpy arrays in, the outputs by name out."""
        return self._thread.run(self.server.infer_async(model, inputs, **kwargs))

    def check(self, case: str | Path, protocol: str = "embedded") -> None:
        """Run a golden case file over ``protocol`` (embedded, http or grpc); an
        AssertionError lists every difference."""
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}; got '{protocol}'")
        path = Path(case)  # absolute (as golden_cases gives it), or within the repository
        if not path.is_absolute():
            path = self.repository / path
        try:
            golden = cases.read(path.parent.parent.name, path, self.repository)
        except CaseError as exc:
            raise AssertionError(f"{path}: {exc}") from None
        outcome = self._thread.call(self._session.run(golden, protocol))
        if outcome.problems:
            raise AssertionError(f"{outcome.name} [{protocol}]: " + "\n".join(outcome.problems))

    def close(self) -> None:
        try:
            self._thread.call(self._session.close())
        finally:
            self._thread.close()


def golden_cases(repository: str | Path) -> list[Any]:
    """Every case file of the repository as a ``pytest.param`` named
    ``<model>/tests/<file>``, for ``@pytest.mark.parametrize("case", golden_cases(repo))``."""
    import pytest

    root = Path(repository).resolve()
    return [
        pytest.param(path, id=path.relative_to(root).as_posix())
        for paths in cases.find(root).values()
        for path in paths
    ]
