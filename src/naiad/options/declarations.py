"""The server's configuration: each option declared once.

A field of :class:`ServerOptions` carries, beside its type and default, the
``naiad serve`` flag that sets it (Triton's name where Triton has one), its
help and its area (:func:`~naiad.options.fields.option`, in
:mod:`naiad.options.fields`).  ``naiad serve --help``, the runner's ``cli_args`` and the
README's options table all come from these declarations (through
:mod:`naiad.options.flags`), so adding an option is adding one field here, and
a default cannot differ between the command line and the embedded API.

CLI flags and the embedded API both build one frozen :class:`ServerOptions`
that is passed down explicitly; nothing deeper reads flags or environment
variables.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from naiad.options import values as values
from naiad.options.fields import (
    FRONTENDS,
    GRPC_LIMITS,
    HTTP_LIMITS,
    MODELS,
    OBSERVABILITY,
    OPERATIONS,
    SCHEDULING,
    Older,
    Option,
    declared,
    no_flag,
    option,
)


def default_of(name: str) -> object:
    """A server option's default, written once, in its declaration."""
    f = ServerOptions.__dataclass_fields__[name]
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def flag_of(name: str) -> str:
    """The flag that sets the option ``name``, for messages that tell the user what to change."""
    spec = declared(ServerOptions.__dataclass_fields__[name])
    assert spec is not None, f"{name} has no flag"
    return spec.flag


_SSL_FILE = "PEM"


@dataclass(frozen=True)
class ServerOptions:
    #: Local folders (Path) or remote repository URLs kept as str (``s3://...``).
    model_repositories: tuple[Path | str, ...] = option(
        (), "--model-repository", MODELS,
        "model repository folder or URL: s3://, gs://, as://, any fsspec URL (repeatable)",
        aliases=("--model-store",), metavar="PATH", read=values.repositories,
        shown=f"./{values.DEFAULT_REPOSITORY}",
    )  # fmt: skip
    model_control_mode: str = option(
        "none", "--model-control-mode", MODELS,
        "none: load every model at start-up; poll: also follow repository changes; "
        "explicit: load and unload only when asked",
        choices=("none", "poll", "explicit"),
    )  # fmt: skip
    load_models: tuple[str, ...] = option(
        (), "--load-model", MODELS,
        "model to load at start-up in explicit mode ('*' for all; repeatable)", metavar="NAME",
    )  # fmt: skip
    repository_poll_secs: float = option(
        15.0, "--repository-poll-secs", MODELS,
        "seconds between two scans of the repositories in poll mode", metavar="SECS",
    )  # fmt: skip
    model_load_thread_count: int = option(
        4, "--model-load-thread-count", MODELS,
        "model versions whose instances load at the same time (0 counts as 1)", metavar="N",
        value=values.count,
    )  # fmt: skip
    model_load_retry_count: int = option(
        0, "--model-load-retry-count", MODELS,
        "times a model version whose instances failed to load is tried again", metavar="N",
        value=values.count,
    )  # fmt: skip
    model_config_name: str | None = option(
        None, "--model-config-name", MODELS,
        "read configs/<NAME>.pbtxt of a model where it has one, else its config.pbtxt",
        metavar="NAME", shown="none; config.pbtxt",
    )  # fmt: skip
    disable_auto_complete_config: bool = option(
        False, "--disable-auto-complete-config", MODELS,
        "do not fill configs from model files",
        read=values.either("--strict-model-config"),
        older=(Older("--strict-model-config", "deprecated: same as --disable-auto-complete-config",
                     kind=bool),),
    )  # fmt: skip
    model_namespacing: bool = option(
        False, "--model-namespacing", MODELS,
        "serve a model name found in several repositories once per repository; an "
        "ensemble's steps resolve in its own repository (docs/differences.md)",
    )  # fmt: skip
    # Residency (docs/residency.md): models loaded on demand, unloaded when idle or to fit.
    model_memory_budget: int = option(
        0, "--model-memory-budget", MODELS,
        "host memory the loaded models may hold (8GiB, 60%); models then load on their "
        "first request and the least recently used idle ones are unloaded to fit "
        "(naiad; 0: no budget; docs/residency.md)",
        metavar="SIZE", value=values.memory_size, shown="none",
    )  # fmt: skip
    model_idle_unload_secs: float = option(
        0.0, "--model-idle-unload-secs", MODELS,
        "unload a model no request has used for this long; it loads again on its next "
        "request (naiad; 0: never; docs/residency.md)", metavar="SECS",
    )  # fmt: skip
    pinned_models: tuple[str, ...] = option(
        (), "--model-pin", MODELS,
        "model always loaded, never unloaded by the budget or for idleness (repeatable; "
        "or the model's parameter naiad.pinned)", metavar="NAME",
    )  # fmt: skip
    strict_readiness: bool = option(
        True, "--strict-readiness", OPERATIONS,
        "ready only when every model is ready (false: when the server is live)",
    )  # fmt: skip
    exit_on_error: bool = option(
        True, "--exit-on-error", OPERATIONS, "exit when a start-up model fails to load",
    )  # fmt: skip
    workers: int = option(
        1, "--workers", OPERATIONS,
        "server processes sharing the HTTP and gRPC ports, each with every model "
        "(auto: one per core; docs/workers.md)",
        metavar="N|auto", value=values.worker_count,
    )  # fmt: skip
    worker_timeout_secs: float = option(
        10.0, "--worker-timeout-secs", OPERATIONS,
        "with --workers: a worker whose event loop does not answer for this long is killed "
        "and restarted, and requests passed to it fail (naiad; 0: never; docs/workers.md)",
        metavar="SECS",
    )  # fmt: skip
    exit_timeout_secs: float = option(
        30.0, "--exit-timeout-secs", OPERATIONS,
        "seconds in-flight requests have to finish on SIGINT/SIGTERM", metavar="SECS",
    )  # fmt: skip
    # Frontends (None or 0 as a port: see each frontend; -1 disables it).
    http_address: str = option(
        "0.0.0.0", "--http-address", FRONTENDS, "address the HTTP/REST frontend binds",
        metavar="ADDRESS",
    )  # fmt: skip
    http_port: int = option(
        8000, "--http-port", FRONTENDS, "port of the HTTP/REST frontend (0: a free one)",
        metavar="PORT", read=values.port_unless_off("--allow-http"),
    )  # fmt: skip
    http_max_input_size: int = option(
        64 * 1024 * 1024, "--http-max-input-size", FRONTENDS,
        "largest request body (400)", metavar="BYTES",
    )  # fmt: skip
    max_request_buffer_size: int = option(
        1024 * 1024 * 1024, "--max-request-buffer-size", FRONTENDS,
        "request bytes the HTTP and gRPC frontends may hold for all clients at once "
        "(per process); past it, HTTP 503 and gRPC RESOURCE_EXHAUSTED; 0 = no limit",
        metavar="BYTES",
    )  # fmt: skip
    # What one HTTP/1.1 client may cost (naiad.frontends.http.limits, docs/security.md).
    http_max_url_size: int = option(
        8 * 1024, "--http-max-url-size", HTTP_LIMITS, "longest request URL (414)",
        metavar="BYTES",
    )  # fmt: skip
    http_max_header_size: int = option(
        8 * 1024, "--http-max-header-size", HTTP_LIMITS, "largest header field (431)",
        metavar="BYTES",
    )  # fmt: skip
    http_max_head_size: int = option(
        32 * 1024, "--http-max-head-size", HTTP_LIMITS, "largest request head in all (431)",
        metavar="BYTES",
    )  # fmt: skip
    http_max_header_count: int = option(
        100, "--http-max-header-count", HTTP_LIMITS, "most header fields in a request (431)",
        metavar="N",
    )  # fmt: skip
    http_header_timeout_secs: float = option(
        60.0, "--http-header-timeout-secs", HTTP_LIMITS,
        "seconds for a whole request head to arrive (408); 0 = no limit", metavar="SECS",
    )  # fmt: skip
    http_body_timeout_secs: float = option(
        60.0, "--http-body-timeout-secs", HTTP_LIMITS,
        "seconds in which a request body must bring --http-body-min-rate's worth (408); "
        "0 = no limit", metavar="SECS",
    )  # fmt: skip
    http_body_min_rate: int = option(
        1024, "--http-body-min-rate", HTTP_LIMITS,
        "bytes per second a request body must average over each --http-body-timeout-secs "
        "(408); 0 = any byte will do", metavar="BYTES",
    )  # fmt: skip
    http_keepalive_timeout_secs: float = option(
        75.0, "--http-keepalive-timeout-secs", HTTP_LIMITS,
        "seconds an idle keep-alive connection is kept; 0 = no limit", metavar="SECS",
    )  # fmt: skip
    http_max_connections: int = option(
        4096, "--http-max-connections", HTTP_LIMITS, "most open connections (503 past it)",
        metavar="N",
    )  # fmt: skip
    #: --http-restricted-api entries "<category,...>:<header>=<value>"
    http_restricted_api: tuple[str, ...] = option(
        (), "--http-restricted-api", OPERATIONS,
        "require a header for these API categories (repeatable)",
        metavar="CATEGORIES:HEADER=VALUE",
    )  # fmt: skip
    #: --http-cors-allow-origins: web origins whose pages may send commands (docs/security.md)
    http_cors_allow_origins: tuple[str, ...] = option(
        (), "--http-cors-allow-origins", OPERATIONS,
        "web origins (scheme://host[:port], or *) whose pages may use the HTTP port "
        "besides its own (CORS); repeatable, or comma-separated (naiad)",
        metavar="ORIGIN",
    )  # fmt: skip
    #: --http-header-forward-pattern: matching headers become request parameters
    http_header_forward_pattern: str = option(
        "", "--http-header-forward-pattern", OPERATIONS,
        "forward matching HTTP headers as request parameters", metavar="REGEX",
    )  # fmt: skip
    #: HTTPS (naiad; Triton's HTTP endpoint has no TLS): certificate and key files,
    #: and a CA file to require client certificates signed by it.
    http_ssl_cert: str = option(
        "", "--http-ssl-cert", FRONTENDS, "serve HTTPS with this certificate (naiad)",
        metavar=_SSL_FILE,
    )  # fmt: skip
    http_ssl_key: str = option(
        "", "--http-ssl-key", FRONTENDS, "private key of --http-ssl-cert", metavar=_SSL_FILE,
    )  # fmt: skip
    http_ssl_root_cert: str = option(
        "", "--http-ssl-root-cert", FRONTENDS,
        "require HTTPS client certificates signed by this CA", metavar=_SSL_FILE,
    )  # fmt: skip
    grpc_address: str = option(
        "0.0.0.0", "--grpc-address", FRONTENDS, "address the gRPC frontend binds",
        metavar="ADDRESS",
    )  # fmt: skip
    grpc_port: int = option(
        8001, "--grpc-port", FRONTENDS, "port of the gRPC frontend (0: a free one)",
        metavar="PORT", read=values.port_unless_off("--allow-grpc"),
    )  # fmt: skip
    # gRPC (see naiad.frontends.grpc.server; Triton's --grpc-* flags and defaults).
    grpc_use_ssl: bool = option(False, "--grpc-use-ssl", FRONTENDS, "serve gRPC over TLS")
    grpc_use_ssl_mutual: bool = option(
        False, "--grpc-use-ssl-mutual", FRONTENDS, "TLS with client certificates",
    )  # fmt: skip
    grpc_server_cert: str = option(
        "", "--grpc-server-cert", FRONTENDS, "certificate of the gRPC server", metavar=_SSL_FILE,
    )  # fmt: skip
    grpc_server_key: str = option(
        "", "--grpc-server-key", FRONTENDS, "private key of --grpc-server-cert",
        metavar=_SSL_FILE,
    )  # fmt: skip
    grpc_root_cert: str = option(
        "", "--grpc-root-cert", FRONTENDS,
        "CA that signs client certificates (--grpc-use-ssl-mutual)", metavar=_SSL_FILE,
    )  # fmt: skip
    #: none | low | medium | high: server->client message compression
    grpc_infer_response_compression_level: str = option(
        "none", "--grpc-infer-response-compression-level", FRONTENDS,
        "compression of the messages the server sends",
        choices=("none", "low", "medium", "high"),
    )  # fmt: skip
    grpc_keepalive_time_ms: int = option(
        7_200_000, "--grpc-keepalive-time", FRONTENDS,
        "milliseconds between two keepalive pings the server sends", metavar="MS",
    )  # fmt: skip
    grpc_keepalive_timeout_ms: int = option(
        20_000, "--grpc-keepalive-timeout", FRONTENDS,
        "milliseconds a keepalive ping waits for its answer before the connection closes",
        metavar="MS",
    )  # fmt: skip
    grpc_keepalive_permit_without_calls: bool = option(
        False, "--grpc-keepalive-permit-without-calls", FRONTENDS,
        "allow keepalive pings without calls",
    )  # fmt: skip
    grpc_http2_max_pings_without_data: int = option(
        2, "--grpc-http2-max-pings-without-data", FRONTENDS,
        "pings the server sends without data before it waits for data (0: no limit)",
        metavar="N",
    )  # fmt: skip
    grpc_http2_min_recv_ping_interval_without_data_ms: int = option(
        300_000, "--grpc-http2-min-recv-ping-interval-without-data", FRONTENDS,
        "milliseconds a client must leave between two pings without data",
        metavar="MS",
    )  # fmt: skip
    grpc_http2_max_ping_strikes: int = option(
        2, "--grpc-http2-max-ping-strikes", FRONTENDS,
        "pings too early a client may send before the connection closes (0: no limit)",
        metavar="N",
    )  # fmt: skip
    #: --reuse-http-port: let several servers bind the port (SO_REUSEPORT)
    http_reuse_port: bool = option(
        False, "--reuse-http-port", FRONTENDS, "let several servers bind the HTTP port",
    )  # fmt: skip
    #: --reuse-grpc-port: let several servers bind the port (SO_REUSEPORT)
    grpc_reuse_port: bool = option(
        False, "--reuse-grpc-port", FRONTENDS, "let several servers bind the gRPC port",
    )  # fmt: skip
    #: --grpc-restricted-protocol entries "<category,...>:<key>=<value>"
    grpc_restricted_protocol: tuple[str, ...] = option(
        (), "--grpc-restricted-protocol", OPERATIONS,
        "require a metadata key for these protocol categories (repeatable)",
        metavar="CATEGORY[,CATEGORY...]:KEY=VALUE",
    )  # fmt: skip
    grpc_header_forward_pattern: str = option(
        "", "--grpc-header-forward-pattern", OPERATIONS,
        "forward matching gRPC metadata as request parameters", metavar="REGEX",
    )  # fmt: skip
    #: naiad (HTTP/2 framed in the event loop) | grpcio (grpc.aio)
    grpc_transport: str = option(
        "naiad", "--grpc-transport", FRONTENDS,
        "naiad: HTTP/2 framed in the event loop (faster); grpcio: grpc.aio (naiad)",
        choices=("naiad", "grpcio"),
    )  # fmt: skip
    # gRPC limits (naiad's; docs/security.md "gRPC (HTTP/2)").
    grpc_max_receive_message_size: int = option(
        64 * 1024 * 1024, "--grpc-max-receive-message-size", GRPC_LIMITS,
        "largest request message; a larger one is answered RESOURCE_EXHAUSTED",
        metavar="BYTES",
    )  # fmt: skip
    grpc_max_concurrent_streams: int = option(
        100, "--grpc-max-concurrent-streams", GRPC_LIMITS,
        "rpcs in progress on one connection", metavar="N",
    )  # fmt: skip
    grpc_max_header_list_size: int = option(
        16 * 1024, "--grpc-max-header-list-size", GRPC_LIMITS,
        "a request's metadata (header list)", metavar="BYTES",
    )  # fmt: skip
    grpc_max_receive_buffer_size: int = option(
        256 * 1024 * 1024, "--grpc-max-receive-buffer-size", GRPC_LIMITS,
        "request bytes one connection may hold beyond its stream windows", metavar="BYTES",
    )  # fmt: skip
    grpc_handshake_timeout_ms: int = option(
        20_000, "--grpc-handshake-timeout", GRPC_LIMITS,
        "milliseconds a new connection has for its preface", metavar="MS",
    )  # fmt: skip
    grpc_max_connection_idle_ms: int = option(
        0, "--grpc-max-connection-idle", GRPC_LIMITS,
        "GOAWAY a connection without calls this many milliseconds; 0: never", metavar="MS",
    )  # fmt: skip
    grpc_send_timeout_ms: int = option(
        60_000, "--grpc-send-timeout", GRPC_LIMITS,
        "reset an rpc whose client takes none of its response this many milliseconds; "
        "0: never",
        metavar="MS",
    )  # fmt: skip
    grpc_receive_timeout_ms: int = option(
        60_000, "--grpc-receive-timeout", GRPC_LIMITS,
        "reset an rpc whose request message, once begun, brings less than "
        "--grpc-receive-min-rate in this many milliseconds; 0: never",
        metavar="MS",
    )  # fmt: skip
    grpc_receive_min_rate: int = option(
        1024, "--grpc-receive-min-rate", GRPC_LIMITS,
        "bytes per second a request message must average over each --grpc-receive-timeout",
        metavar="BYTES",
    )  # fmt: skip
    grpc_max_connections: int = option(
        4096, "--grpc-max-connections", GRPC_LIMITS,
        "most open connections (past it, the longest-idle one is closed, or the newcomer)",
        metavar="N",
    )  # fmt: skip
    metrics_address: str | None = option(
        None, "--metrics-address", FRONTENDS, "address the Prometheus metrics frontend binds",
        metavar="ADDRESS", shown="the --http-address",
    )  # fmt: skip
    metrics_port: int = option(
        8002, "--metrics-port", FRONTENDS, "port of the metrics frontend (0: a free one)",
        metavar="PORT", read=values.port_unless_off("--allow-metrics"),
    )  # fmt: skip
    allow_http: bool = option(True, "--allow-http", FRONTENDS, "serve HTTP/REST")
    allow_grpc: bool = option(True, "--allow-grpc", FRONTENDS, "serve gRPC")
    allow_metrics: bool = option(True, "--allow-metrics", FRONTENDS, "serve Prometheus metrics")
    allow_dashboard: bool = option(
        True, "--allow-dashboard", FRONTENDS,
        "serve the web dashboard at /dashboard/ on the HTTP port (docs/dashboard.md)",
    )  # fmt: skip
    allow_docs: bool = option(
        True, "--allow-docs", FRONTENDS,
        "serve Swagger UI at /docs on the HTTP port, to try each model (needs naiad[docs]; "
        "docs/openapi.md)",
    )  # fmt: skip
    allow_openai: bool = option(
        True, "--allow-openai", FRONTENDS,
        "serve the OpenAI-compatible API at /v1 on the HTTP port, for the models that opt "
        "in (docs/openai.md)",
    )  # fmt: skip
    # Metrics (see naiad.metrics).
    allow_cpu_metrics: bool = option(
        True, "--allow-cpu-metrics", OBSERVABILITY, "report CPU utilisation and memory",
    )  # fmt: skip
    allow_gpu_metrics: bool = option(
        True, "--allow-gpu-metrics", OBSERVABILITY, "report GPU metrics (needs naiad[gpu])",
    )  # fmt: skip
    metrics_interval_ms: int = option(
        2000, "--metrics-interval-ms", OBSERVABILITY,
        "polling interval of the CPU/GPU metrics", metavar="MS",
    )  # fmt: skip
    metrics_config: dict[str, str] = option(
        {}, "--metrics-config", OBSERVABILITY,
        "counter_latencies, histogram_latencies, summary_latencies (true/false), "
        "summary_quantiles (q:err,...) (repeatable)",
        metavar="KEY=VALUE", read=values.metrics_config,
    )  # fmt: skip
    #: --trace-config entries by mode: "" (global: rate, level, count, mode),
    #: "triton" (file, log-frequency), "opentelemetry" (url, resource, bsp_*).
    #: ``level`` may hold several comma-separated levels.
    trace_config: dict[str, dict[str, str]] = option(
        {}, "--trace-config", OBSERVABILITY,
        "rate, level, count, mode; triton,file / triton,log-frequency; "
        "opentelemetry,url / ,resource (repeatable)",
        metavar="[MODE,]KEY=VALUE", read=values.trace_config,
        older=(
            Older("--trace-file", "deprecated: --trace-config triton,file"),
            Older("--trace-level", "deprecated: --trace-config level", repeat=True),
            Older("--trace-rate", "deprecated: --trace-config rate"),
            Older("--trace-count", "deprecated: --trace-config count"),
            Older("--trace-log-frequency", "deprecated: --trace-config triton,log-frequency"),
        ),
    )  # fmt: skip
    #: ``--allow-client-shm``: clients may register shared memory (off by default, as
    #: in current Triton: a client could otherwise make the server open and write any
    #: object under /dev/shm it names; docs/security.md).
    allow_client_shm: bool = option(
        False, "--allow-client-shm", OPERATIONS,
        "let clients register system and CUDA shared memory (needed by perf_analyzer "
        "--shared-memory); false as in current Triton",
    )  # fmt: skip
    log_verbose: int = option(
        0, "--log-verbose", OBSERVABILITY, "verbose logging level (0: off)", metavar="LEVEL",
    )  # fmt: skip
    log_info: bool = option(True, "--log-info", OBSERVABILITY, "log info messages")
    log_warning: bool = option(True, "--log-warning", OBSERVABILITY, "log warnings")
    log_error: bool = option(True, "--log-error", OBSERVABILITY, "log errors")
    log_format: str = option(
        "default", "--log-format", OBSERVABILITY, "Triton's log line format",
        choices=("default", "ISO8601"),
    )  # fmt: skip
    log_file: str = option(
        "", "--log-file", OBSERVABILITY, "write the log to this file", metavar="PATH",
        shown="none; stderr",
    )  # fmt: skip
    backend_config: dict[str, dict[str, str]] = option(
        {}, "--backend-config", MODELS, "a setting of one backend (repeatable)",
        metavar="BACKEND,KEY=VALUE", read=values.backend_config,
    )  # fmt: skip
    #: GPU ids the server may use; empty on a CPU-only machine.
    gpus: tuple[int, ...] = no_flag(
        (), "the embedded API's; else the machine's (backends/devices.py)"
    )
    server_id: str = option(
        "triton", "--id", OPERATIONS, "server id reported by server metadata", metavar="ID",
    )  # fmt: skip
    # Scheduling (see naiad.scheduling).
    rate_limit: str = option(
        "off", "--rate-limit", SCHEDULING,
        "execute an instance only when its group's rate_limiter resources are free",
        choices=("off", "execution_count"),
    )  # fmt: skip
    rate_limit_resources: tuple[str, ...] = option(
        (), "--rate-limit-resource", SCHEDULING,
        "size of a rate-limiter resource (repeatable)", metavar="NAME:COUNT[:DEVICE]",
        value=values.resource, shown="the largest count any instance needs",
    )  # fmt: skip
    cache_config: dict[str, dict[str, str]] = option(
        {}, "--cache-config", SCHEDULING, "response cache, e.g. local,size=1048576",
        metavar="CACHE,KEY=VALUE", read=values.cache_config,
        older=(Older("--response-cache-byte-size",
                     "deprecated: same as --cache-config local,size=N", kind=int,
                     metavar="BYTES"),),
    )  # fmt: skip
    max_queued_requests: int = option(
        0, "--max-queued-requests", SCHEDULING,
        "answer UNAVAILABLE when the server holds N requests (queued or executing); "
        "0 = unlimited.  Per model: config parameter naiad.max_queued_requests",
        metavar="N",
    )  # fmt: skip
    #: The Triton flags given that naiad accepts without effect, for the start-up warnings.
    triton_flags_without_effect: tuple[str, ...] = no_flag(
        (), "set by the flags of naiad.options.triton_flags, which are no options of naiad's"
    )
    extra: dict[str, object] = no_flag({}, "a place for settings that have no option yet")


def options_by_flag() -> Mapping[str, tuple[dataclasses.Field[Any], Option]]:
    """Every declared option by its flag, in declaration order."""
    return {
        spec.flag: (f, spec)
        for f in dataclasses.fields(ServerOptions)
        if (spec := declared(f)) is not None
    }
