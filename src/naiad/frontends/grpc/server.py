"""The gRPC frontend object the server starts and stops.

By default the rpcs are served by naiad's HTTP/2 transport
(:mod:`naiad.frontends.grpc.http2`), framed in the event loop next to the
schedulers.  ``--grpc-transport grpcio`` serves the same method table with
``grpc.aio`` instead, whose hand-off of every rpc between grpc core's
threads and the loop costs about four times the server CPU per request
(``benchmarks/README.md``).  Options mirror Triton's (grpc.md §0, §10):
keepalive, the HTTP/2 ping policy, response compression, TLS, SO_REUSEPORT
only when asked; ``channel_options`` are the grpc core arguments for them,
and for naiad's limits (``docs/security.md``) where grpc core has them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc

from naiad.frontends.grpc import handlers, health
from naiad.frontends.grpc.http2.connection import Connection
from naiad.frontends.grpc.http2.limits import MAX_FRAME, Limits
from naiad.frontends.grpc.http2.server import Http2Server
from naiad.frontends.grpc.lenient import lenient
from naiad.frontends.grpc.restricted import parse_restricted
from naiad.frontends.listener import tls_context

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane
    from naiad.frontends.budget import RequestBudget
    from naiad.options.declarations import ServerOptions

#: Triton sets both message limits to INT32_MAX; grpc's default receive limit is 4 MiB.
#: naiad sends any size, and receives up to --grpc-max-receive-message-size.
MAX_MESSAGE = 2**31 - 1

#: --grpc-infer-response-compression-level -> GRPC_COMPRESS_LEVEL_*
COMPRESSION_LEVELS = {"none": 0, "low": 1, "medium": 2, "med": 2, "high": 3}
#: the same levels as zlib's (naiad's transport compresses with zlib / gzip)
ZLIB_LEVELS = {"none": 0, "low": 1, "medium": 6, "med": 6, "high": 9}


def _compression_level(options: ServerOptions) -> str:
    level = options.grpc_infer_response_compression_level.lower()
    if level not in COMPRESSION_LEVELS:
        raise ValueError(
            f"invalid --grpc-infer-response-compression-level '{level}', expected one of "
            "none, low, medium, high"
        )
    return level


def channel_options(options: ServerOptions) -> list[tuple[str, Any]]:
    """grpc server arguments for ``options`` (the names of grpc core's channel args)."""
    level = _compression_level(options)
    out: list[tuple[str, Any]] = [
        ("grpc.max_send_message_length", MAX_MESSAGE),
        # The limits of naiad's own transport, as far as grpc core has them (security.md):
        ("grpc.max_receive_message_length", options.grpc_max_receive_message_size),
        ("grpc.max_concurrent_streams", options.grpc_max_concurrent_streams),
        ("grpc.max_metadata_size", options.grpc_max_header_list_size),  # soft limit
        ("grpc.absolute_max_metadata_size", options.grpc_max_header_list_size),
        ("grpc.http2.max_frame_size", MAX_FRAME),
        ("grpc.keepalive_time_ms", options.grpc_keepalive_time_ms),
        ("grpc.keepalive_timeout_ms", options.grpc_keepalive_timeout_ms),
        ("grpc.keepalive_permit_without_calls", int(options.grpc_keepalive_permit_without_calls)),
        ("grpc.http2.max_pings_without_data", options.grpc_http2_max_pings_without_data),
        (
            "grpc.http2.min_ping_interval_without_data_ms",
            options.grpc_http2_min_recv_ping_interval_without_data_ms,
        ),
        ("grpc.http2.max_ping_strikes", options.grpc_http2_max_ping_strikes),
        ("grpc.so_reuseport", int(options.grpc_reuse_port)),
    ]
    if options.grpc_handshake_timeout_ms > 0:
        out.append(("grpc.server_handshake_timeout_ms", options.grpc_handshake_timeout_ms))
    if options.grpc_max_connections > 0:  # refuses past it (no idle one makes room)
        out.append(("grpc.max_allowed_incoming_connections", options.grpc_max_connections))
    if options.grpc_max_connection_idle_ms > 0:
        out.append(("grpc.max_connection_idle_ms", options.grpc_max_connection_idle_ms))
    if COMPRESSION_LEVELS[level]:
        out.append(("grpc.default_compression_level", COMPRESSION_LEVELS[level]))
    return out


def _tls_files(options: ServerOptions) -> tuple[str, str, str | None, bool] | None:
    """(key, cert, root CA or None, client certificates required) for ``--grpc-use-ssl``."""
    if not (options.grpc_use_ssl or options.grpc_use_ssl_mutual):
        return None
    for path, what in ((options.grpc_server_key, "--grpc-server-key"),
                       (options.grpc_server_cert, "--grpc-server-cert")):  # fmt: skip
        if not path:
            raise ValueError(f"--grpc-use-ssl needs {what}")
    mutual = options.grpc_use_ssl_mutual
    if mutual and not options.grpc_root_cert:
        raise ValueError("--grpc-use-ssl needs --grpc-root-cert")
    root = options.grpc_root_cert or None
    return options.grpc_server_key, options.grpc_server_cert, root, mutual


def credentials(options: ServerOptions) -> grpc.ServerCredentials | None:
    """grpc.aio's TLS credentials for ``--grpc-use-ssl`` (client certificates with ``-mutual``)."""
    files = _tls_files(options)
    if files is None:
        return None
    key, cert, root, mutual = files
    return grpc.ssl_server_credentials(
        [(Path(key).read_bytes(), Path(cert).read_bytes())],
        root_certificates=Path(root).read_bytes() if root else None,
        require_client_auth=mutual,
    )


def _target(host: str, port: int) -> str:
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # IPv6 literal
    return f"{host or '0.0.0.0'}:{port}"


class GrpcFrontend:
    """A started gRPC server (naiad's HTTP/2 one or ``grpc.aio``); ``port`` is the bound port."""

    def __init__(self, server: Http2Server | grpc.aio.Server, port: int) -> None:
        self.server = server
        self.port = port

    async def close(self, timeout: float) -> None:
        """Stop accepting rpcs, let those in flight finish (up to ``timeout``), cancel the rest."""
        if isinstance(self.server, Http2Server):
            await self.server.close(timeout)
        else:
            await self.server.stop(timeout)


def method_handlers(
    dataplane: DataPlane, options: ServerOptions
) -> dict[str, grpc.RpcMethodHandler]:
    """The ``inference.GRPCInferenceService`` handlers that :func:`start` registers.

    Apart from :func:`start` so that an in-process driver (the instruction
    count of ``benchmarks/instructions.py``) calls exactly what grpc would.
    """
    restricted = parse_restricted(options.grpc_restricted_protocol)
    pattern = options.grpc_header_forward_pattern
    forward = re.compile(pattern, re.IGNORECASE) if pattern else None
    stream_bytes = Limits.of(options).receive_buffer  # at least one message
    return handlers.build(dataplane, restricted, forward, stream_bytes)


async def start(
    dataplane: DataPlane, options: ServerOptions, budget: RequestBudget | None = None
) -> GrpcFrontend:
    """Serve ``inference.GRPCInferenceService`` and the health service on
    ``options.grpc_address:grpc_port`` (0 = a free port), with the transport
    ``options.grpc_transport`` names; naiad's holds request messages within ``budget``,
    the server's (none: a budget of its own)."""
    services = {  # method_handlers refuses nonsense limits, whichever transport serves
        handlers.SERVICE: method_handlers(dataplane, options),
        health.SERVICE: health.handlers(dataplane),
    }
    if options.grpc_transport == "grpcio":
        return await _start_grpcio(services, options)
    if options.grpc_transport != "naiad":
        raise ValueError(
            f"invalid --grpc-transport '{options.grpc_transport}', expected naiad or grpcio"
        )
    level = _compression_level(options)
    server = Http2Server(services, options, ZLIB_LEVELS[level], budget)
    files = _tls_files(options)
    tls = None
    if files is not None:
        key, cert, root, mutual = files
        tls = tls_context(cert, key, root, mutual, alpn=("h2",))  # gRPC clients insist on h2
    port = await server.listen(
        lambda: Connection(server),
        options.grpc_address,
        options.grpc_port,
        tls,
        options.grpc_reuse_port,
    )
    return GrpcFrontend(server, port)


async def _start_grpcio(
    services: dict[str, dict[str, grpc.RpcMethodHandler]], options: ServerOptions
) -> GrpcFrontend:
    server = grpc.aio.server(options=channel_options(options))
    for name, table in services.items():
        server.add_registered_method_handlers(name, lenient(table))
    target = _target(options.grpc_address, options.grpc_port)
    creds = credentials(options)
    if creds is None:
        port = server.add_insecure_port(target)
    else:
        port = server.add_secure_port(target, creds)
    await server.start()
    return GrpcFrontend(server, port)
