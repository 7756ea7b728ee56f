"""``cli_args``: the flags of ``naiad serve``, parsed as ``naiad serve`` parses them.

A flag means the same in a runner as on the command line because both parse
with the arguments made from the option declarations (:mod:`naiad.options.flags`);
only the addresses and ports are the runner's to choose
(no sockets in the embedded mode, free loopback ports for a child server).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from naiad.core.errors import InvalidArgument
from naiad.options.declarations import ServerOptions
from naiad.options.flags import options_from_args, serve_parser


class _Parser(argparse.ArgumentParser):
    """Raises what ``naiad serve`` would print before exiting."""

    def error(self, message: str) -> NoReturn:
        raise InvalidArgument(f"cli_args: {message} (see naiad serve --help)")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise InvalidArgument(f"cli_args: {message or 'the parser exited'}".strip())


#: Flags whose presence means the user asked for naiad's logging on stderr or a file.
_LOG_FLAGS = ("--log-verbose", "--log-info", "--log-warning", "--log-error", "--log-format",
              "--log-file")  # fmt: skip


@dataclasses.dataclass(frozen=True)
class ServeArgs:
    """``cli_args`` (with ``model_repository`` in front), checked."""

    args: tuple[str, ...]
    namespace: argparse.Namespace

    @classmethod
    def parse(
        cls, model_repository: str | Path | Sequence[str | Path] | None, cli_args: Sequence[str]
    ) -> ServeArgs:
        if isinstance(cli_args, str):
            raise InvalidArgument("cli_args is a list of flags, e.g. ['--log-verbose=1']")
        if model_repository is None:
            repos: list[str | Path] = []
        elif isinstance(model_repository, (str, Path)):
            repos = [model_repository]
        else:
            repos = list(model_repository)
        args = (*(f"--model-repository={r}" for r in repos), *cli_args)
        namespace, unknown = serve_parser(_Parser).parse_known_args(args)
        if unknown:
            raise InvalidArgument(
                f"cli_args: unknown flag(s) {', '.join(unknown)} (naiad serve --help lists them)"
            )
        return cls(args, namespace)

    def options(self) -> ServerOptions:
        """Server options for the embedded mode: every frontend off (no sockets)."""
        try:
            options = options_from_args(self.namespace)
        except SystemExit as exc:  # a malformed value the parser could not type-check
            raise InvalidArgument(f"cli_args: {str(exc.code).removeprefix('naiad: ')}") from None
        missing = [p for p in options.model_repositories if isinstance(p, Path) and not p.is_dir()]
        if missing:
            raise InvalidArgument(
                f"model repository not found: {', '.join(str(p) for p in missing)} "
                "(pass model_repository= or --model-repository in cli_args)"
            )
        return dataclasses.replace(options, http_port=-1, grpc_port=-1, metrics_port=-1)

    def wants_logging(self) -> bool:
        return any(a.split("=", 1)[0] in _LOG_FLAGS for a in self.args)

    def child_args(self, protocol: str, port: int, metrics_port: int | None) -> list[str]:
        """``naiad serve`` flags for a child that serves ``protocol`` on a loopback port.

        The runner's flags come last, so they win over the same flags in ``cli_args``.
        """
        self.options()  # the same checks as the embedded mode, before a process starts
        other = "grpc" if protocol == "http" else "http"
        own = [
            f"--{protocol}-address=127.0.0.1",
            f"--{protocol}-port={port}",
            f"--allow-{protocol}=true",
            f"--allow-{other}=false",
        ]
        if metrics_port is not None:
            own += ["--metrics-address=127.0.0.1", f"--metrics-port={metrics_port}"]
        return [*self.args, *own]

    @property
    def allow_metrics(self) -> bool:
        return bool(self.namespace.allow_metrics)
