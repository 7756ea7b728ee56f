"""The gRPC frontend object the server starts and stops: a ``grpc.aio`` server.

``grpc.aio`` runs the handlers on the server's own event loop, next to the
schedulers, so an inference costs no thread hop.  (Bare-server anchors on
this machine had the synchronous grpcio server with 16 threads slower than
``grpc.aio`` at c=1/8/32; naiad's own numbers: ``benchmarks/grpc_bench.py``.)  Channel arguments mirror Triton's
(grpc.md §0, §10): INT32_MAX message limits, keepalive, HTTP/2 ping policy,
response compression level, SO_REUSEPORT only when asked.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc

from naiad.frontends.grpc import handlers, health
from naiad.frontends.grpc.restricted import parse_restricted

if TYPE_CHECKING:
    from naiad.core.dataplane import DataPlane
    from naiad.core.options import ServerOptions

#: Triton sets both message limits to INT32_MAX; grpc's default receive limit is 4 MiB.
MAX_MESSAGE = 2**31 - 1

#: --grpc-infer-response-compression-level -> GRPC_COMPRESS_LEVEL_*
COMPRESSION_LEVELS = {"none": 0, "low": 1, "medium": 2, "med": 2, "high": 3}


def channel_options(options: ServerOptions) -> list[tuple[str, Any]]:
    """grpc server arguments for ``options`` (the names of grpc core's channel args)."""
    level = options.grpc_infer_response_compression_level.lower()
    if level not in COMPRESSION_LEVELS:
        raise ValueError(
            f"invalid --grpc-infer-response-compression-level '{level}', expected one of "
            "none, low, medium, high"
        )
    out: list[tuple[str, Any]] = [
        ("grpc.max_send_message_length", MAX_MESSAGE),
        ("grpc.max_receive_message_length", MAX_MESSAGE),
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
    if COMPRESSION_LEVELS[level]:
        out.append(("grpc.default_compression_level", COMPRESSION_LEVELS[level]))
    return out


def credentials(options: ServerOptions) -> grpc.ServerCredentials | None:
    """TLS credentials for ``--grpc-use-ssl`` (client certificates with ``-mutual``)."""
    if not (options.grpc_use_ssl or options.grpc_use_ssl_mutual):
        return None

    def read(path: str, what: str) -> bytes:
        if not path:
            raise ValueError(f"--grpc-use-ssl needs {what}")
        return Path(path).read_bytes()

    key = read(options.grpc_server_key, "--grpc-server-key")
    cert = read(options.grpc_server_cert, "--grpc-server-cert")
    mutual = options.grpc_use_ssl_mutual
    root = read(options.grpc_root_cert, "--grpc-root-cert") if mutual else None
    if root is None and options.grpc_root_cert:
        root = Path(options.grpc_root_cert).read_bytes()
    return grpc.ssl_server_credentials(
        [(key, cert)], root_certificates=root, require_client_auth=mutual
    )


def _target(host: str, port: int) -> str:
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # IPv6 literal
    return f"{host or '0.0.0.0'}:{port}"


class GrpcFrontend:
    """A started ``grpc.aio`` server; ``port`` is the bound port."""

    def __init__(self, server: grpc.aio.Server, port: int) -> None:
        self.server = server
        self.port = port

    async def close(self, timeout: float) -> None:
        """Stop accepting rpcs, let those in flight finish (up to ``timeout``), cancel the rest."""
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
    return handlers.build(dataplane, restricted, forward)


async def start(dataplane: DataPlane, options: ServerOptions) -> GrpcFrontend:
    """Serve ``inference.GRPCInferenceService`` and the health service on
    ``options.grpc_address:grpc_port`` (0 = a free port)."""
    table = method_handlers(dataplane, options)
    server = grpc.aio.server(options=channel_options(options))
    server.add_registered_method_handlers(handlers.SERVICE, table)
    server.add_registered_method_handlers(health.SERVICE, health.handlers(dataplane))
    target = _target(options.grpc_address, options.grpc_port)
    creds = credentials(options)
    if creds is None:
        port = server.add_insecure_port(target)
    else:
        port = server.add_secure_port(target, creds)
    await server.start()
    return GrpcFrontend(server, port)
