"""What every benchmark shares: server processes on free ports and perf_analyzer runs.

The reference tools come from ``scripts/setup-reference.sh``
(``$NAIAD_REFERENCE_HOME``, default ``~/.cache/naiad-reference``).
"""

from __future__ import annotations

import os
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # this checkout's naiad, as its servers run it

from naiad.ready import NotServing, ServeProcess  # noqa: E402

REFERENCE = Path(os.environ.get("NAIAD_REFERENCE_HOME", Path.home() / ".cache/naiad-reference"))
PERF_ANALYZER = REFERENCE / "bin" / "perf_analyzer"
TRITONSERVER = REFERENCE / "bin" / "tritonserver"

#: ``naiad serve`` from this checkout, whatever ``naiad`` the environment has installed.
NAIAD_CLI = "import sys; from naiad.cli import main; sys.exit(main(sys.argv[1:]))"

_NUM = r"([0-9.]+)"


def perf_analyzer_missing() -> bool:
    """Say so when the reference tools are not installed (the caller exits 2)."""
    if PERF_ANALYZER.exists():
        return False
    print(f"perf_analyzer not found at {PERF_ANALYZER}; run scripts/setup-reference.sh")
    return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: A server a benchmark started: naiad (with its ready pipe) or the reference Triton.
Server = ServeProcess | subprocess.Popen


def wait_ready(port: int, proc: Server, timeout: float = 120.0, protocol: str = "http") -> None:
    """Wait until the server on ``port`` is ready: naiad says so down its ready pipe
    (naiad.ready), Triton is asked over ``protocol`` until it answers."""
    if isinstance(proc, ServeProcess):
        try:
            proc.wait_ready(timeout)
        except NotServing as exc:
            raise RuntimeError(str(exc)) from None
        return
    (_wait_grpc if protocol == "grpc" else _wait_http)(port, proc, timeout)


def _wait_http(port: int, proc: subprocess.Popen, timeout: float) -> None:
    """Poll ``/v2/health/ready`` over HTTP until it answers 200."""
    deadline = time.monotonic() + timeout
    url = f"http://127.0.0.1:{port}/v2/health/ready"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"server on port {port} not ready after {timeout}s")


def _wait_grpc(port: int, proc: subprocess.Popen, timeout: float) -> None:
    """Poll the standard health service until it answers SERVING."""
    import grpc

    serving = b"\x08\x01"  # HealthCheckResponse{status: SERVING} on the wire
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        check = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=lambda raw: raw,
            response_deserializer=lambda raw: raw,
        )
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}")
            try:
                if check(b"", timeout=1) == serving:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.2)
    raise RuntimeError(f"server on port {port} not ready after {timeout}s")


def checkout_env() -> dict[str, str]:
    """The environment for a subprocess that imports this checkout's naiad."""
    path = [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in path if p))


def start_naiad(
    repo: Path,
    port: int,
    log: Path,
    protocol: str = "http",
    prefix: Sequence[str] = (),
    environment: Mapping[str, str] | None = None,
    **settings: object,
) -> ServeProcess:
    """``naiad serve`` (this checkout's) with only the ``protocol`` endpoint on loopback
    ``port`` and metrics off, as :func:`start_triton` starts Triton; ``settings`` are further
    options (``grpc_transport="grpcio"`` for ``--grpc-transport grpcio``); ``prefix`` runs
    before it and execs it (contention.CpuQuota's, to start it inside a cgroup);
    ``environment`` is added to its environment."""
    other = "grpc" if protocol == "http" else "http"
    options = [f"--{key.replace('_', '-')}={value}" for key, value in settings.items()]
    return ServeProcess(
        [*prefix, sys.executable, "-c", NAIAD_CLI, "serve", "--model-repository", str(repo),
         f"--{protocol}-address", "127.0.0.1", f"--{protocol}-port", str(port),
         f"--allow-{other}", "false", "--allow-metrics", "false", *options],
        env={**checkout_env(), **(environment or {})}, on_line=log_lines(log),
    )  # fmt: skip


def log_lines(log: Path) -> Callable[[str], None]:
    """Each line to ``log`` as it comes (the file stays open while the server runs)."""
    out = log.open("w")

    def write(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    return write


def start_triton(
    repo: Path, port: int, log: Path, protocol: str = "http", prefix: Sequence[str] = ()
) -> subprocess.Popen:
    """The reference Triton with only the ``protocol`` endpoint, on loopback ``port``
    (``prefix`` as in :func:`start_naiad`)."""
    other = "grpc" if protocol == "http" else "http"
    return subprocess.Popen(
        [*prefix, str(TRITONSERVER), "--model-repository", str(repo), f"--{protocol}-address",
         "127.0.0.1", f"--{protocol}-port", str(port), f"--allow-{other}", "false",
         "--allow-metrics", "false"],
        stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip


def stop(servers: Iterable[Server]) -> None:
    """SIGTERM every server (they drain), then wait; kill what does not exit."""
    procs = [s.process if isinstance(s, ServeProcess) else s for s in servers]
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def perf(
    model: str,
    url: str,
    concurrency: int,
    interval_ms: int,
    *extra: str,
    cpus: str | None = None,
) -> dict[str, float]:
    """One perf_analyzer run at ``concurrency``: throughput (infer/s), p50, p99 and the
    average latency (us); with ``cpus``, perf_analyzer runs on those CPUs only (``taskset``).

    Stability is not asked for (a shared machine never is): three windows are measured.
    """
    tool = ["taskset", "-c", cpus] if cpus is not None else []
    return _measure([*tool, str(PERF_ANALYZER)], model, url, concurrency, interval_ms, extra)


def naiad_perf(
    model: str, url: str, concurrency: int, interval_ms: int, *extra: str
) -> dict[str, float]:
    """:func:`perf`'s run with ``naiad perf`` (this checkout's) instead of perf_analyzer:
    the same flags, the same report."""
    tool = [sys.executable, "-c", NAIAD_CLI, "perf"]
    return _measure(tool, model, url, concurrency, interval_ms, extra, checkout_env())


def _measure(
    tool: list[str],
    model: str,
    url: str,
    concurrency: int,
    interval_ms: int,
    extra: tuple[str, ...],
    env: dict[str, str] | None = None,
) -> dict[str, float]:
    command = [
        *tool, "-m", model, "-u", url, *extra,
        "--concurrency-range", str(concurrency), "-p", str(interval_ms),
        "--stability-percentage", "100000", "--max-trials", "10",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    out = done.stdout + done.stderr
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(tool[-1:])} failed:\n{out}")
    return {
        "throughput": float(re.findall(r"Throughput: " + _NUM, out)[-1]),
        "p50": float(re.findall(r"p50 latency: " + _NUM, out)[-1]),
        "p99": float(re.findall(r"p99 latency: " + _NUM, out)[-1]),
        "avg": float(re.findall(r"Avg latency: " + _NUM, out)[-1]),
    }


def inference_count(port: int, protocol: str, model: str) -> int:
    """How many requests for ``model`` the server on ``port`` has answered successfully
    (its statistics extension, which naiad and Triton both serve on either protocol)."""
    if protocol == "grpc":
        import tritonclient.grpc as client

        with client.InferenceServerClient(f"127.0.0.1:{port}") as grpc_client:
            stats = grpc_client.get_inference_statistics(model, as_json=True)
    else:
        import tritonclient.http as client

        with client.InferenceServerClient(f"127.0.0.1:{port}") as http_client:
            stats = http_client.get_inference_statistics(model)
    success = stats["model_stats"][0]["inference_stats"]["success"]
    return int(success.get("count", 0))


def round_order(names: Iterable[str], rnd: int) -> list[str]:
    """The servers in the order round ``rnd`` runs them: reversed every other round,
    so that whatever drifts during a run (heat, steal) does not always favour one."""
    order = list(names)
    return order if rnd % 2 == 0 else order[::-1]


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def table_head(keys: str, with_triton: bool) -> str:
    """The header of a result table: ``keys`` (e.g. "| c |") then naiad's and Triton's columns."""
    head = f"{keys} naiad infer/s | naiad p50 us | naiad p99 us |"
    if with_triton:
        head += " Triton infer/s | Triton p50 us | Triton p99 us | throughput x | p99 x |"
    return head + "\n|" + "---|" * (head.count("|") - 1)


def table_row(
    keys: str, naiad: list[dict[str, float]], triton: list[dict[str, float]] | None
) -> str:
    """One row: medians of naiad's runs, then Triton's and the naiad/Triton ratios."""
    row = f"{keys} {_cells(naiad)} |"
    if triton is not None:
        ratio = median(naiad, "throughput") / median(triton, "throughput")
        p99 = median(naiad, "p99") / median(triton, "p99")
        row += f" {_cells(triton)} | {ratio:.2f} | {p99:.2f} |"
    return row


def _cells(runs: list[dict[str, float]]) -> str:
    return " | ".join(f"{median(runs, key):.0f}" for key in ("throughput", "p50", "p99"))
