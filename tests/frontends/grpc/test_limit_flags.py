"""The gRPC limit flags of ``naiad serve`` reach the server options, with the documented
defaults (docs/security.md), and nonsense is refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from naiad.frontends.grpc.http2.limits import Limits
from naiad.options.declarations import ServerOptions
from naiad.options.flags import options_from_args, serve_parser

pytestmark = pytest.mark.unit


def _options(*flags: str) -> ServerOptions:
    return options_from_args(serve_parser().parse_args(flags))


def test_limit_flags_reach_the_options() -> None:
    options = _options(
        "--grpc-max-receive-message-size", "1000",
        "--grpc-max-concurrent-streams", "7",
        "--grpc-max-header-list-size", "2000",
        "--grpc-max-receive-buffer-size", "3000",
        "--grpc-handshake-timeout", "400",
        "--grpc-max-connection-idle", "500",
        "--grpc-send-timeout", "600",
    )  # fmt: skip
    assert (options.grpc_max_receive_message_size, options.grpc_max_concurrent_streams,
            options.grpc_max_header_list_size, options.grpc_max_receive_buffer_size,
            options.grpc_handshake_timeout_ms, options.grpc_max_connection_idle_ms,
            options.grpc_send_timeout_ms) == (1000, 7, 2000, 3000, 400, 500, 600)  # fmt: skip


def test_the_defaults_are_the_documented_ones() -> None:
    flags, embedded = _options(), ServerOptions()
    for options in (flags, embedded):
        limits = Limits.of(options)
        assert limits.max_message == 64 * 1024 * 1024
        assert limits.max_streams == 100
        assert limits.max_header_list == 16 * 1024
        assert limits.receive_buffer == 256 * 1024 * 1024
        assert (limits.handshake_timeout, limits.idle_timeout, limits.send_timeout) == (20, 0, 60)


def test_the_receive_buffer_holds_at_least_one_message() -> None:
    options = replace(ServerOptions(), grpc_max_receive_buffer_size=0)
    assert Limits.of(options).receive_buffer == 64 * 1024 * 1024 + 5


@pytest.mark.parametrize(
    "field", ["max_receive_message_size", "max_concurrent_streams", "max_header_list_size"]
)
def test_a_limit_must_be_positive(field: str) -> None:
    with pytest.raises(ValueError, match=f"--grpc-{field.replace('_', '-')} must be positive"):
        Limits.of(replace(ServerOptions(), **{f"grpc_{field}": 0}))
