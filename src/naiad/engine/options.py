"""The server's configuration, typed once.

CLI flags and the embedded API both build one frozen :class:`ServerOptions`
that is passed down explicitly; nothing deeper reads flags or environment
variables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class ServerOptions:
    #: Local folders (Path) or remote repository URLs kept as str (``s3://...``).
    model_repositories: tuple[Path | str, ...] = ()
    model_control_mode: str = "none"  # none | poll | explicit
    load_models: tuple[str, ...] = ()
    repository_poll_secs: float = 15.0
    model_config_name: str | None = None
    disable_auto_complete_config: bool = False
    strict_readiness: bool = True
    exit_on_error: bool = True
    exit_timeout_secs: float = 30.0
    # Frontends (None or 0 as a port: see each frontend; -1 disables it).
    http_address: str = "0.0.0.0"
    http_port: int = 8000
    http_max_input_size: int = 64 * 1024 * 1024
    # What one HTTP/1.1 client may cost (naiad.frontends.http.limits, docs/security.md).
    http_max_url_size: int = 8 * 1024
    http_max_header_size: int = 8 * 1024
    http_max_head_size: int = 32 * 1024
    http_max_header_count: int = 100
    http_header_timeout_secs: float = 60.0
    http_body_timeout_secs: float = 60.0
    http_keepalive_timeout_secs: float = 75.0
    http_max_connections: int = 4096
    #: --http-restricted-api entries "<category,...>:<header>=<value>"
    http_restricted_api: tuple[str, ...] = ()
    #: --http-header-forward-pattern: matching headers become request parameters
    http_header_forward_pattern: str = ""
    #: HTTPS (naiad; Triton's HTTP endpoint has no TLS): certificate and key files,
    #: and a CA file to require client certificates signed by it.
    http_ssl_cert: str = ""
    http_ssl_key: str = ""
    http_ssl_root_cert: str = ""
    grpc_address: str = "0.0.0.0"
    grpc_port: int = 8001
    # gRPC (see naiad.frontends.grpc.server; Triton's --grpc-* flags and defaults).
    grpc_use_ssl: bool = False
    grpc_use_ssl_mutual: bool = False
    grpc_server_cert: str = ""
    grpc_server_key: str = ""
    grpc_root_cert: str = ""
    #: none | low | medium | high: server->client message compression
    grpc_infer_response_compression_level: str = "none"
    grpc_keepalive_time_ms: int = 7_200_000
    grpc_keepalive_timeout_ms: int = 20_000
    grpc_keepalive_permit_without_calls: bool = False
    grpc_http2_max_pings_without_data: int = 2
    grpc_http2_min_recv_ping_interval_without_data_ms: int = 300_000
    grpc_http2_max_ping_strikes: int = 2
    #: --reuse-grpc-port: let several servers bind the port (SO_REUSEPORT)
    grpc_reuse_port: bool = False
    #: --grpc-restricted-protocol entries "<category,...>:<key>=<value>"
    grpc_restricted_protocol: tuple[str, ...] = ()
    grpc_header_forward_pattern: str = ""
    #: naiad (HTTP/2 framed in the event loop) | grpcio (grpc.aio)
    grpc_transport: str = "naiad"
    # gRPC limits (naiad's; docs/security.md "gRPC (HTTP/2)"): the largest request
    # message, streams and header list per connection, request bytes one connection
    # may hold beyond its stream windows, and timeouts (0 = none) for the preface,
    # for a connection without calls and for a peer that takes no response data.
    grpc_max_receive_message_size: int = 64 * 1024 * 1024
    grpc_max_concurrent_streams: int = 100
    grpc_max_header_list_size: int = 16 * 1024
    grpc_max_receive_buffer_size: int = 256 * 1024 * 1024
    grpc_handshake_timeout_ms: int = 20_000
    grpc_max_connection_idle_ms: int = 0
    grpc_send_timeout_ms: int = 60_000
    metrics_address: str | None = None
    metrics_port: int = 8002
    allow_http: bool = True
    allow_grpc: bool = True
    allow_metrics: bool = True
    # Metrics (see naiad.metrics): --allow-cpu-metrics, --allow-gpu-metrics, the
    # polling interval of the CPU/GPU gauges and --metrics-config key=value
    # settings (counter_latencies, histogram_latencies, summary_latencies,
    # summary_quantiles).
    allow_cpu_metrics: bool = True
    allow_gpu_metrics: bool = True
    metrics_interval_ms: int = 2000
    metrics_config: dict[str, str] = field(default_factory=dict)
    #: --trace-config entries by mode: "" (global: rate, level, count, mode),
    #: "triton" (file, log-frequency), "opentelemetry" (url, resource, bsp_*).
    #: ``level`` may hold several comma-separated levels.
    trace_config: dict[str, dict[str, str]] = field(default_factory=dict)
    #: ``--allow-client-shm``: clients may register shared memory (off by default, as
    #: in current Triton: a client could otherwise make the server open and write any
    #: object under /dev/shm it names; docs/security.md).
    allow_client_shm: bool = False
    log_verbose: int = 0
    log_info: bool = True
    log_warning: bool = True
    log_error: bool = True
    log_format: str = "default"
    log_file: str = ""
    backend_config: dict[str, dict[str, str]] = field(default_factory=dict)
    #: GPU ids the server may use; empty on a CPU-only machine.
    gpus: tuple[int, ...] = ()
    server_id: str = "triton"
    # Scheduling (see naiad.scheduling): --rate-limit off | execution_count,
    # --rate-limit-resource entries "<name>:<count>[:<device>]", the response
    # cache (--cache-config local,size=N) and the server-wide admission limit
    # of queued plus executing requests (0 = unlimited).
    rate_limit: str = "off"
    rate_limit_resources: tuple[str, ...] = ()
    cache_config: dict[str, dict[str, str]] = field(default_factory=dict)
    max_queued_requests: int = 0
    extra: dict[str, object] = field(default_factory=dict)
