"""The ``naiad`` command: ``serve`` a model repository, ``check`` one for problems.

Option names are Triton's where Triton has one, so existing launch scripts
carry over (``--model-repository``, ``--http-port``, ``--load-model``, ...).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from naiad._version import TRITON_VERSION, __version__
from naiad.core.errors import NaiadError
from naiad.engine.options import ServerOptions
from naiad.repository.sources import is_url

log = logging.getLogger("naiad")

DEFAULT_REPOSITORY = Path("examples") / "model_repository"
DESCRIPTION = (
    "A Triton-compatible inference server. 'naiad serve' serves model repositories over "
    "Triton's HTTP and gRPC protocols; 'naiad check' prints every problem of a repository."
)


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got '{text}'")


def _flag(parser: argparse.ArgumentParser, name: str, default: bool, help: str) -> None:
    parser.add_argument(
        name, type=_bool, nargs="?", const=True, default=default, metavar="BOOL", help=help
    )


def _backend_config(values: list[str]) -> dict[str, dict[str, str]]:
    """``--backend-config=onnxruntime,key=value`` entries, grouped by backend."""
    out: dict[str, dict[str, str]] = {}
    for item in values:
        backend, sep, setting = item.partition(",")
        key, eq, value = setting.partition("=")
        if not sep or not eq:
            raise SystemExit(
                f"naiad: --backend-config expects <backend>,<key>=<value>, got '{item}'"
            )
        out.setdefault(backend, {})[key] = value
    return out


def _resource(text: str) -> str:
    """A ``--rate-limit-resource`` value, checked early for a clear message."""
    from naiad.scheduling.rate_limiter import ResourceLimit

    try:
        ResourceLimit.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _cache_config(values: list[str], byte_size: int | None) -> dict[str, dict[str, str]]:
    """``--cache-config=local,size=N`` entries by cache (plus the legacy byte-size flag)."""
    out: dict[str, dict[str, str]] = {}
    for item in values:
        cache, sep, setting = item.partition(",")
        key, eq, value = setting.partition("=")
        if not sep or not eq:
            raise SystemExit(f"naiad: --cache-config expects <cache>,<key>=<value>, got '{item}'")
        out.setdefault(cache, {})[key] = value
    if byte_size:
        out.setdefault("local", {})["size"] = str(byte_size)
    return out


def _metrics_config(values: list[str]) -> dict[str, str]:
    """``--metrics-config key=value`` entries, checked here for a clear message."""
    from naiad.metrics import MetricsConfig

    out: dict[str, str] = {}
    for item in values:
        key, eq, value = item.partition("=")
        if not eq:
            raise SystemExit(f"naiad: --metrics-config expects <key>=<value>, got '{item}'")
        out[key.strip()] = value.strip()
    try:
        MetricsConfig.parse(out)
    except ValueError as exc:
        raise SystemExit(f"naiad: {exc}") from None
    return out


def _trace_config(args: argparse.Namespace) -> dict[str, dict[str, str]]:
    """``--trace-config [mode,]key=value`` entries by mode ("" = global), plus the
    deprecated ``--trace-*`` flags; repeated ``level`` values accumulate."""
    out: dict[str, dict[str, str]] = {}
    entries = list(args.trace_config)
    for flag, key in (
        ("trace_file", "triton,file"),
        ("trace_rate", "rate"),
        ("trace_count", "count"),
        ("trace_log_frequency", "triton,log-frequency"),
    ):
        if getattr(args, flag) is not None:
            entries.insert(0, f"{key}={getattr(args, flag)}")
    entries[:0] = [f"level={level}" for level in args.trace_level]
    for item in entries:
        head, eq, value = item.partition("=")
        mode, comma, key = head.rpartition(",")
        if not eq or not key or (comma and mode not in ("triton", "opentelemetry")):
            raise SystemExit(f"naiad: --trace-config expects [<mode>,]<key>=<value>, got '{item}'")
        section = out.setdefault(mode, {})
        if not mode and key == "level" and "level" in section:
            section["level"] += "," + value
        elif mode == "opentelemetry" and key == "resource" and "resource" in section:
            section["resource"] += "," + value
        else:
            section[key] = value
    return out


def _grpc_flags(serve: argparse.ArgumentParser) -> None:
    """Triton's --grpc-* options (names and defaults as Triton's)."""
    _flag(serve, "--grpc-use-ssl", False, "serve gRPC over TLS")
    _flag(serve, "--grpc-use-ssl-mutual", False, "TLS with client certificates")
    serve.add_argument("--grpc-server-cert", default="", metavar="PEM")
    serve.add_argument("--grpc-server-key", default="", metavar="PEM")
    serve.add_argument("--grpc-root-cert", default="", metavar="PEM")
    serve.add_argument(
        "--grpc-infer-response-compression-level",
        default="none",
        choices=("none", "low", "medium", "high"),
    )
    serve.add_argument("--grpc-keepalive-time", type=int, default=7_200_000, metavar="MS")
    serve.add_argument("--grpc-keepalive-timeout", type=int, default=20_000, metavar="MS")
    _flag(
        serve, "--grpc-keepalive-permit-without-calls", False, "allow keepalive pings without calls"
    )
    serve.add_argument("--grpc-http2-max-pings-without-data", type=int, default=2)
    serve.add_argument(
        "--grpc-http2-min-recv-ping-interval-without-data", type=int, default=300_000, metavar="MS"
    )
    serve.add_argument("--grpc-http2-max-ping-strikes", type=int, default=2)
    _flag(serve, "--reuse-grpc-port", False, "let several servers bind the gRPC port")
    serve.add_argument(
        "--grpc-restricted-protocol",
        action="append",
        default=[],
        metavar="CATEGORY[,CATEGORY...]:KEY=VALUE",
    )
    serve.add_argument("--grpc-header-forward-pattern", default="", metavar="REGEX")
    serve.add_argument(
        "--grpc-transport",
        choices=("naiad", "grpcio"),
        default="naiad",
        help="naiad: HTTP/2 framed in the event loop (default, faster); grpcio: grpc.aio",
    )
    # naiad's limits on what one client may make the server hold (docs/security.md).
    for flag, field, metavar, what in (
        ("--grpc-max-receive-message-size", "grpc_max_receive_message_size", "BYTES",
         "largest request message; a larger one is answered RESOURCE_EXHAUSTED"),
        ("--grpc-max-concurrent-streams", "grpc_max_concurrent_streams", "N",
         "rpcs in progress on one connection"),
        ("--grpc-max-header-list-size", "grpc_max_header_list_size", "BYTES",
         "a request's metadata (header list)"),
        ("--grpc-max-receive-buffer-size", "grpc_max_receive_buffer_size", "BYTES",
         "request bytes one connection may hold beyond its stream windows"),
        ("--grpc-handshake-timeout", "grpc_handshake_timeout_ms", "MS",
         "time a new connection has for its preface"),
        ("--grpc-max-connection-idle", "grpc_max_connection_idle_ms", "MS",
         "GOAWAY a connection without calls this long; 0: never"),
        ("--grpc-send-timeout", "grpc_send_timeout_ms", "MS",
         "reset an rpc whose client takes none of its response this long; 0: never"),
    ):  # fmt: skip
        default = _default(field)
        serve.add_argument(
            flag, type=int, default=default, metavar=metavar, help=f"{what} (default: {default})"
        )


def _default(field: str) -> object:
    """A server option's default, written once, in :class:`ServerOptions`."""
    return ServerOptions.__dataclass_fields__[field].default


def _http_limit_flags(serve: argparse.ArgumentParser) -> None:
    """What one HTTP client may cost (naiad.frontends.http.limits; docs/security.md)."""
    limits = serve.add_argument_group("HTTP limits (naiad; defaults after nginx and Node)")
    for name, unit, text in (
        ("max-input-size", "BYTES", "largest request body (400)"),
        ("max-url-size", "BYTES", "longest request URL (414)"),
        ("max-header-size", "BYTES", "largest header field (431)"),
        ("max-head-size", "BYTES", "largest request head in all (431)"),
        ("max-header-count", "N", "most header fields in a request (431)"),
        ("max-connections", "N", "most open connections (503 past it)"),
    ):
        default = _default("http_" + name.replace("-", "_"))
        limits.add_argument(
            f"--http-{name}", type=int, default=default, metavar=unit,
            help=f"{text}; default {default}",
        )  # fmt: skip
    for name, text in (
        ("header-timeout-secs", "for a whole request head to arrive (408)"),
        ("body-timeout-secs", "between two reads of a request body (408)"),
        ("keepalive-timeout-secs", "an idle keep-alive connection is kept"),
    ):
        seconds = _default("http_" + name.replace("-", "_"))
        limits.add_argument(
            f"--http-{name}", type=float, default=seconds, metavar="SECS",
            help=f"seconds {text}; 0 = no limit; default {seconds:g}",
        )  # fmt: skip


def build_parser(
    parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser,
) -> argparse.ArgumentParser:
    """The ``naiad`` command's parser; ``naiad.Runner`` parses ``cli_args`` with it too,
    through a ``parser_class`` whose errors raise instead of exiting."""
    parser = parser_class(prog="naiad", description=DESCRIPTION)
    parser.add_argument(
        "--version",
        action="version",
        version=f"naiad {__version__} (Triton {TRITON_VERSION} protocols)",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve one or more model repositories")
    serve.add_argument(
        "--model-repository",
        "--model-store",
        action="append",
        default=[],
        metavar="PATH",
        help="model repository folder or URL: s3://, gs://, "
        "as://, any fsspec URL (repeatable); default: "
        f"./{DEFAULT_REPOSITORY}",
    )
    serve.add_argument("--http-address", default="0.0.0.0")
    serve.add_argument("--http-port", type=int, default=8000)
    serve.add_argument("--grpc-address", default="0.0.0.0")
    serve.add_argument("--grpc-port", type=int, default=8001)
    _grpc_flags(serve)
    serve.add_argument("--metrics-address", default=None)
    serve.add_argument("--metrics-port", type=int, default=8002)
    _flag(serve, "--allow-http", True, "serve HTTP/REST")
    _flag(serve, "--allow-grpc", True, "serve gRPC")
    _flag(serve, "--allow-metrics", True, "serve Prometheus metrics")
    _flag(serve, "--allow-cpu-metrics", True, "report CPU utilisation and memory")
    _flag(serve, "--allow-gpu-metrics", True, "report GPU metrics (needs naiad[gpu])")
    serve.add_argument(
        "--metrics-interval-ms",
        type=int,
        default=2000,
        help="polling interval of the CPU/GPU metrics",
    )
    serve.add_argument(
        "--metrics-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="counter_latencies, histogram_latencies, summary_latencies "
        "(true/false), summary_quantiles (q:err,...)",
    )
    serve.add_argument(
        "--trace-config",
        action="append",
        default=[],
        metavar="[MODE,]KEY=VALUE",
        help="rate, level, count, mode; "
        "triton,file / triton,log-frequency; opentelemetry,url / ,resource",
    )
    serve.add_argument("--trace-file", default=None, help="deprecated: --trace-config triton,file")
    serve.add_argument(
        "--trace-level", action="append", default=[], help="deprecated: --trace-config level"
    )
    serve.add_argument("--trace-rate", default=None, help="deprecated: --trace-config rate")
    serve.add_argument("--trace-count", default=None, help="deprecated: --trace-config count")
    serve.add_argument(
        "--trace-log-frequency",
        default=None,
        help="deprecated: --trace-config triton,log-frequency",
    )
    _http_limit_flags(serve)
    serve.add_argument(
        "--http-restricted-api",
        action="append",
        default=[],
        metavar="CATEGORIES:HEADER=VALUE",
        help="require a header for these API categories (repeatable)",
    )
    serve.add_argument(
        "--http-header-forward-pattern",
        default="",
        help="forward matching HTTP headers as request parameters",
    )
    serve.add_argument("--http-ssl-cert", default="", help="serve HTTPS with this certificate")
    serve.add_argument("--http-ssl-key", default="", help="private key of --http-ssl-cert")
    serve.add_argument(
        "--http-ssl-root-cert",
        default="",
        help="require HTTPS client certificates signed by this CA",
    )
    _flag(
        serve,
        "--allow-client-shm",
        False,
        "let clients register system and CUDA shared memory (needed by perf_analyzer "
        "--shared-memory); default false, as in current Triton",
    )
    serve.add_argument("--model-control-mode", choices=("none", "poll", "explicit"), default="none")
    serve.add_argument(
        "--load-model",
        action="append",
        default=[],
        metavar="NAME",
        help="model to load at start-up in explicit mode ('*' for all)",
    )
    serve.add_argument("--repository-poll-secs", type=float, default=15.0)
    serve.add_argument("--model-config-name", default=None)
    _flag(serve, "--disable-auto-complete-config", False, "do not fill configs from model files")
    serve.add_argument(
        "--strict-model-config",
        type=_bool,
        nargs="?",
        const=True,
        default=None,
        metavar="BOOL",
        help="deprecated: same as --disable-auto-complete-config",
    )
    _flag(serve, "--strict-readiness", True, "ready only when every model is ready")
    _flag(serve, "--exit-on-error", True, "exit when a start-up model fails to load")
    serve.add_argument("--exit-timeout-secs", type=float, default=30.0)
    serve.add_argument("--log-verbose", type=int, default=0)
    _flag(serve, "--log-info", True, "log info messages")
    _flag(serve, "--log-warning", True, "log warnings")
    _flag(serve, "--log-error", True, "log errors")
    serve.add_argument("--log-format", choices=("default", "ISO8601"), default="default")
    serve.add_argument("--log-file", default="")
    serve.add_argument("--backend-config", action="append", default=[], metavar="BACKEND,KEY=VALUE")
    serve.add_argument("--id", default="triton", help="server id reported by server metadata")
    serve.add_argument(
        "--rate-limit",
        choices=("off", "execution_count"),
        default="off",
        help="execute an instance only when its group's rate_limiter resources are free",
    )
    serve.add_argument(
        "--rate-limit-resource",
        action="append",
        default=[],
        type=_resource,
        metavar="NAME:COUNT[:DEVICE]",
        help="size of a rate-limiter resource (default: the largest count any instance needs)",
    )
    serve.add_argument(
        "--cache-config",
        action="append",
        default=[],
        metavar="CACHE,KEY=VALUE",
        help="response cache, e.g. local,size=1048576",
    )
    serve.add_argument(
        "--response-cache-byte-size",
        type=int,
        default=None,
        help="deprecated: same as --cache-config local,size=N",
    )
    serve.add_argument(
        "--max-queued-requests",
        type=int,
        default=0,
        metavar="N",
        help="answer UNAVAILABLE when the server holds N requests (queued or "
        "executing); 0 = unlimited.  Per model: config parameter "
        "naiad.max_queued_requests",
    )

    check = sub.add_parser("check", help="validate a model repository and print every problem")
    check.add_argument("repositories", nargs="+", metavar="REPO")
    _flag(check, "--disable-auto-complete-config", False, "do not fill configs from model files")
    return parser


def options_from_args(args: argparse.Namespace) -> ServerOptions:
    repos = args.model_repository or [str(DEFAULT_REPOSITORY)]
    disable_ac = args.disable_auto_complete_config or bool(args.strict_model_config)
    return ServerOptions(
        model_repositories=tuple(r if is_url(r) else Path(r) for r in repos),
        model_control_mode=args.model_control_mode,
        load_models=tuple(args.load_model),
        repository_poll_secs=args.repository_poll_secs,
        model_config_name=args.model_config_name,
        disable_auto_complete_config=disable_ac,
        strict_readiness=args.strict_readiness,
        exit_on_error=args.exit_on_error,
        exit_timeout_secs=args.exit_timeout_secs,
        http_address=args.http_address,
        http_port=args.http_port if args.allow_http else -1,
        http_max_input_size=args.http_max_input_size,
        http_max_url_size=args.http_max_url_size,
        http_max_header_size=args.http_max_header_size,
        http_max_head_size=args.http_max_head_size,
        http_max_header_count=args.http_max_header_count,
        http_max_connections=args.http_max_connections,
        http_header_timeout_secs=args.http_header_timeout_secs,
        http_body_timeout_secs=args.http_body_timeout_secs,
        http_keepalive_timeout_secs=args.http_keepalive_timeout_secs,
        http_restricted_api=tuple(args.http_restricted_api),
        http_header_forward_pattern=args.http_header_forward_pattern,
        http_ssl_cert=args.http_ssl_cert,
        http_ssl_key=args.http_ssl_key,
        http_ssl_root_cert=args.http_ssl_root_cert,
        grpc_address=args.grpc_address,
        grpc_port=args.grpc_port if args.allow_grpc else -1,
        grpc_use_ssl=args.grpc_use_ssl,
        grpc_use_ssl_mutual=args.grpc_use_ssl_mutual,
        grpc_server_cert=args.grpc_server_cert,
        grpc_server_key=args.grpc_server_key,
        grpc_root_cert=args.grpc_root_cert,
        grpc_infer_response_compression_level=args.grpc_infer_response_compression_level,
        grpc_keepalive_time_ms=args.grpc_keepalive_time,
        grpc_keepalive_timeout_ms=args.grpc_keepalive_timeout,
        grpc_keepalive_permit_without_calls=args.grpc_keepalive_permit_without_calls,
        grpc_http2_max_pings_without_data=args.grpc_http2_max_pings_without_data,
        grpc_http2_min_recv_ping_interval_without_data_ms=(
            args.grpc_http2_min_recv_ping_interval_without_data
        ),
        grpc_http2_max_ping_strikes=args.grpc_http2_max_ping_strikes,
        grpc_reuse_port=args.reuse_grpc_port,
        grpc_restricted_protocol=tuple(args.grpc_restricted_protocol),
        grpc_header_forward_pattern=args.grpc_header_forward_pattern,
        grpc_transport=args.grpc_transport,
        grpc_max_receive_message_size=args.grpc_max_receive_message_size,
        grpc_max_concurrent_streams=args.grpc_max_concurrent_streams,
        grpc_max_header_list_size=args.grpc_max_header_list_size,
        grpc_max_receive_buffer_size=args.grpc_max_receive_buffer_size,
        grpc_handshake_timeout_ms=args.grpc_handshake_timeout,
        grpc_max_connection_idle_ms=args.grpc_max_connection_idle,
        grpc_send_timeout_ms=args.grpc_send_timeout,
        metrics_address=args.metrics_address,
        metrics_port=args.metrics_port if args.allow_metrics else -1,
        allow_http=args.allow_http,
        allow_grpc=args.allow_grpc,
        allow_metrics=args.allow_metrics,
        allow_client_shm=args.allow_client_shm,
        log_verbose=args.log_verbose,
        log_info=args.log_info,
        log_warning=args.log_warning,
        log_error=args.log_error,
        log_format=args.log_format,
        log_file=args.log_file,
        backend_config=_backend_config(args.backend_config),
        server_id=args.id,
        rate_limit=args.rate_limit,
        rate_limit_resources=tuple(args.rate_limit_resource),
        cache_config=_cache_config(args.cache_config, args.response_cache_byte_size),
        max_queued_requests=args.max_queued_requests,
        allow_cpu_metrics=args.allow_cpu_metrics,
        allow_gpu_metrics=args.allow_gpu_metrics,
        metrics_interval_ms=args.metrics_interval_ms,
        metrics_config=_metrics_config(args.metrics_config),
        trace_config=_trace_config(args),
    )


def status_table(rows: Sequence[tuple[str, str, str]]) -> str:
    """Triton's start-up model status table."""
    header = ("Model", "Version", "Status")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def fmt(row: Sequence[str]) -> str:
        return "|" + "|".join(f" {c:<{w}} " for c, w in zip(row, widths, strict=True)) + "|"

    return "\n".join([line, fmt(header), line, *(fmt(r) for r in rows), line])


async def serve(options: ServerOptions) -> int:
    """Serve until SIGINT/SIGTERM; routine start-up failures are one line and exit 1."""
    from naiad.frontends.ports import reserved
    from naiad.server import Server

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    problem = _repository_problem(options) or _file_problem(options)
    if problem:
        log.error("%s", problem)
        return 1
    log.info(
        "naiad %s (Triton %s protocols) serving %s; model control mode %s",
        __version__,
        TRITON_VERSION,
        ", ".join(str(r) for r in options.model_repositories),
        options.model_control_mode,
    )
    server = Server(options=options)
    try:
        with reserved(options):  # a port in use fails here, before any model loads
            await server.dataplane.start()
    except NaiadError as exc:  # a port in use, a remote repository whose extra is missing
        log.error("%s", exc.message)
        await server.dataplane.stop(0)
        return 1
    rows = []
    for index in await server.dataplane.repository_index():
        state = index.state or "UNAVAILABLE"
        status = state + (f": {index.reason}" if index.reason else "")
        rows.append((index.name, index.version or "-", status))
    print(status_table(rows), flush=True)
    failed = server.dataplane.failed_models()
    if failed and options.exit_on_error:
        log.error(
            "exiting: %d model(s) failed to load (use --exit-on-error=false to serve the others)",
            len(failed),
        )
        await server.dataplane.stop(0)
        return 1
    # Frontends open after the models are loaded, as in Triton.
    server.dataplane.started = False
    try:
        await server.start_frontends()
    except (NaiadError, OSError, ValueError) as exc:  # a port taken meanwhile, a TLS file
        log.error("%s", exc.message if isinstance(exc, NaiadError) else exc)
        await server.stop_async(0)
        return 1
    server.dataplane.started = True
    # Everything loaded so far lives as long as the server: keep it out of the
    # collector's full passes, which would otherwise stall requests for ms.
    gc.collect()
    gc.freeze()
    await stop.wait()
    log.info("signal received: draining in-flight requests (up to %ss)", options.exit_timeout_secs)
    await server.stop_async()
    log.info("server stopped")
    return 0


def _file_problem(options: ServerOptions) -> str:
    """A certificate, key or CA file given by a flag that cannot be read, or ""."""
    import os

    for flag in ("grpc_server_cert", "grpc_server_key", "grpc_root_cert",
                 "http_ssl_cert", "http_ssl_key", "http_ssl_root_cert"):  # fmt: skip
        value = getattr(options, flag)
        if value and not (Path(value).is_file() and os.access(value, os.R_OK)):
            return f"--{flag.replace('_', '-')} {value}: no such readable file"
    return ""


def _repository_problem(options: ServerOptions) -> str:
    """Why a local repository cannot be served (missing, not a folder, unreadable), or ""."""
    import os

    for repo in options.model_repositories:
        if is_url(repo):
            continue
        path = Path(repo)
        if not path.exists():
            return f"model repository not found: {path} (--model-repository)"
        if not path.is_dir():
            return f"model repository is not a folder: {path} (--model-repository)"
        if not os.access(path, os.R_OK | os.X_OK):
            return f"model repository cannot be read (permission denied): {path}"
    return ""


def check(repositories: list[str], disable_auto_complete: bool) -> int:
    from naiad.engine.check import check_repositories

    report = check_repositories(
        [Path(r) for r in repositories], disable_auto_complete_config=disable_auto_complete
    )
    for problem in report.problems:
        print(problem)
    print(report.summary())
    return 1 if report.problems else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "check":
        return check(args.repositories, args.disable_auto_complete_config)
    from naiad import logs
    from naiad.server import new_event_loop

    options = options_from_args(args)
    logs.configure(options.log_verbose, options.log_format, options.log_file)
    from naiad.engine.settings import LogSettings

    LogSettings.from_options(options).apply()  # the --log-info/warning/error switches
    loop = new_event_loop()
    try:
        return loop.run_until_complete(serve(options))
    except Exception as exc:  # a start-up failure nobody foresaw: still one line
        if options.log_verbose:
            log.exception("naiad serve failed")
        else:
            log.error("naiad serve failed: %s: %s (--log-verbose 1 shows where)",
                      type(exc).__name__, exc)  # fmt: skip
        return 1
    finally:
        loop.close()


if __name__ == "__main__":
    sys.exit(main())
