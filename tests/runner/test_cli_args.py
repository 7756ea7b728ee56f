"""``cli_args`` read as ``naiad serve`` reads its flags, without a server or a child.

The runner builds its parser from the same option declarations as the
command (it imports nothing of ``naiad.cli``), so a flag means the same in
both, and what the command refuses the runner refuses as an INVALID_ARG.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from naiad.core.errors import InvalidArgument
from naiad.options.flags import options_from_args, serve_parser
from naiad.runner.options import ServeArgs

pytestmark = pytest.mark.unit

FLAGS = [
    "--model-control-mode=explicit", "--load-model=*", "--strict-model-config",
    "--trace-level=TIMESTAMPS", "--trace-config=rate=10", "--response-cache-byte-size=64",
    "--backend-config=python,shm-default-byte-size=1048576", "--grpc-keepalive-time=5",
]  # fmt: skip


def test_flags_mean_what_they_mean_to_naiad_serve(tmp_path: Path) -> None:
    parsed = ServeArgs.parse(tmp_path, FLAGS).options()
    command = options_from_args(
        serve_parser().parse_args([f"--model-repository={tmp_path}", *FLAGS])
    )
    assert parsed == dataclasses.replace(command, http_port=-1, grpc_port=-1, metrics_port=-1)
    assert parsed.disable_auto_complete_config
    assert parsed.trace_config == {"": {"level": "TIMESTAMPS", "rate": "10"}}
    assert parsed.cache_config == {"local": {"size": "64"}}


@pytest.mark.parametrize(
    ("cli_args", "message"),
    [
        (["--no-such-flag=1"],
         "cli_args: unknown flag(s) --no-such-flag=1 (naiad serve --help lists them)"),
        (["--http-port=eighty"],
         "cli_args: argument --http-port: invalid int value: 'eighty' (see naiad serve --help)"),
        (["--allow-http=maybe"], "argument --allow-http: expected true or false, got 'maybe'"),
        (["--rate-limit-resource=R"], "expected <name>:<count>[:<device>], got 'R'"),
        (["--version"], "unknown flag(s) --version"),
    ],
)  # fmt: skip
def test_what_naiad_serve_refuses_is_an_invalid_argument(cli_args: list[str], message: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        ServeArgs.parse(None, cli_args)
    assert message in str(info.value)


def test_a_malformed_value_is_refused_by_options(tmp_path: Path) -> None:
    args = ServeArgs.parse(tmp_path, ["--cache-config=oops"])
    with pytest.raises(InvalidArgument, match=r"^cli_args: --cache-config expects <cache>,"):
        args.options()


def test_the_child_gets_the_flags_with_the_runners_last(tmp_path: Path) -> None:
    args = ServeArgs.parse(tmp_path, ["--http-port=1", "--log-verbose=1"])
    child = args.child_args("http", 5000, None)
    assert child[:3] == [f"--model-repository={tmp_path}", "--http-port=1", "--log-verbose=1"]
    options = options_from_args(serve_parser().parse_args(child))
    assert (options.http_port, options.http_address, options.grpc_port) == (5000, "127.0.0.1", -1)
    assert args.wants_logging()
