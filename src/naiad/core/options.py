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
    model_repositories: tuple[Path, ...] = ()
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
    grpc_address: str = "0.0.0.0"
    grpc_port: int = 8001
    metrics_address: str | None = None
    metrics_port: int = 8002
    allow_http: bool = True
    allow_grpc: bool = True
    allow_metrics: bool = True
    #: ``--allow-client-shm``: clients may register shared memory.  Triton's newest
    #: default is false; naiad's is true so older clients and perf_analyzer
    #: ``--shared-memory`` work out of the box.
    allow_client_shm: bool = True
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
