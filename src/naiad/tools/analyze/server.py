"""The naiad server a configuration is measured on, and its model control API.

By default ``naiad analyze`` starts its own ``naiad serve`` child in explicit
model control mode over a scratch repository that holds only the analysed
model (a link to its folder): nothing else loads, nothing of the user's
repository is written, and each configuration is loaded in place with the
load API's config override (``POST /v2/repository/models/M/load`` with
``{"parameters": {"config": ...}}``), which swaps the instances in a
fraction of a second instead of restarting a process.  The child runs in a
session of its own, so a Ctrl-C meant for ``naiad analyze`` does not stop it
halfway through a measurement; it is stopped when the analysis ends, and
stops itself if ``naiad analyze`` dies.

With ``--url`` the server is one already running in explicit mode.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from naiad import interrupts
from naiad.ready import NotServing, Ports
from naiad.tools.analyze.errors import AnalyzeError
from naiad.tools.client import HttpClient, ServerError, Unreachable

#: How long one load or config request may take (loading a big model is slow).
_REQUEST_TIMEOUT_S = 300
#: How long a readiness probe waits for its answer.
_PROBE_TIMEOUT_S = 2

T = TypeVar("T")


class LoadFailed(Exception):
    """The server refused or failed to load a configuration (its message)."""


class Server:
    """A naiad server reached over HTTP at ``http_address`` (host:port)."""

    def __init__(self, http_address: str, pid: int | None, measure_address: str) -> None:
        self.http_address = http_address
        #: The server's process id, for its CPU time and memory (None: not on this host).
        self.pid = pid
        #: Where the load goes: the HTTP address, or the gRPC one with ``-i grpc``.
        self.measure_address = measure_address

    def load(self, model: str, config_json: str | None = None) -> None:
        """(Re)load ``model``, with ``config_json`` in place of its config file if given."""
        body: dict[str, Any] = {}
        if config_json is not None:
            body["parameters"] = {"config": config_json}
        path = f"/v2/repository/models/{quote(model, safe='')}/load"
        try:
            self._run(self._client().call("POST", path, body))
        except ServerError as exc:
            raise LoadFailed(exc.message) from None

    def served_config(self, model: str) -> dict[str, Any]:
        path = f"/v2/models/{quote(model, safe='')}/config"
        try:
            config = self._run(self._client().json("GET", path))
        except ServerError as exc:
            raise AnalyzeError(exc.message) from None
        if not isinstance(config, dict):
            raise AnalyzeError(f"the server answered model '{model}''s config with {config!r:.80}")
        return config

    def live(self) -> bool:
        """Whether the server answers its liveness probe now."""
        try:
            status, _ = self._run(self._client(_PROBE_TIMEOUT_S).request("GET", "/v2/health/live"))
        except AnalyzeError:
            return False
        return status == 200

    def stop(self) -> None:
        """Nothing to stop: the server is not ours."""

    def _client(self, timeout_s: float = _REQUEST_TIMEOUT_S) -> HttpClient:
        return HttpClient(self.http_address, timeout_s=timeout_s)

    def _run(self, call: Coroutine[Any, Any, T]) -> T:
        """One call, on a loop of its own (naiad analyze's steps are synchronous); a
        Ctrl-C waits for the call (bounded by its timeout), then stops the analysis."""
        try:
            with interrupts.held():
                return asyncio.run(call)
        except Unreachable as exc:
            raise AnalyzeError(f"cannot reach naiad at {self.http_address}: {exc}") from None


class ChildServer(Server):
    """``naiad serve`` started by ``naiad analyze`` over a scratch repository."""

    def __init__(self, repository: Path, model: str, scratch: Path, protocol: str,
                 startup_timeout: float) -> None:  # fmt: skip
        from naiad.runner.child import ChildServer as Child

        served = scratch / "repository"
        served.mkdir(parents=True)
        _link(repository / model, served / model)
        args = [
            "--model-repository", str(served), "--model-control-mode", "explicit",
            "--http-port", "0", "--grpc-port", "0",  # it says which ports it bound
            "--http-address", "127.0.0.1", "--grpc-address", "127.0.0.1",
            "--allow-metrics", "false", "--log-info", "false",
        ]  # fmt: skip
        self.child = Child("analyze", args)
        ports = self._wait_ready(startup_timeout)
        http, grpc = f"127.0.0.1:{ports['http']}", f"127.0.0.1:{ports['grpc']}"
        super().__init__(http, self.child.pid, grpc if protocol == "grpc" else http)

    def _wait_ready(self, timeout: float) -> Ports:
        """The ports the child serves on, once it does (naiad.ready); a failed start at once."""
        try:
            return self.child.serve.wait_ready(timeout)
        except NotServing as exc:
            self.stop()
            if exc.code is None:
                raise AnalyzeError(f"the naiad server did not start within {timeout:g} s") from None
            raise AnalyzeError(
                f"the naiad server did not start (exit code {exc.code}): {_last_line(exc.output)}"
            ) from None

    def stop(self) -> None:
        self.child.stop(10)


def _link(source: Path, target: Path) -> None:
    try:
        target.symlink_to(source.resolve(), target_is_directory=True)
    except OSError:  # no symbolic links here (some Windows set-ups)
        shutil.copytree(source, target)


def _last_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"
