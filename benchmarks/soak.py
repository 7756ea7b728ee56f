"""Soak: many clients for a while, some of them sending garbage, against one naiad serve.

    python benchmarks/soak.py [--duration 60] [--clients 20] [--bad 0.05]

Half the clients speak HTTP, half gRPC (tritonclient), to the example
repository's ``add_sub`` (ONNX) and ``add_sub_python`` (a Python model in its
own process).  A fraction ``--bad`` of the requests is malformed: broken
JSON, wrong shapes and datatypes, unknown models, a truncated body, an
oversized header, garbage protobuf.  The run passes when every valid request
got the right answer (none wrong, none lost), every malformed one got a
client error (HTTP 4xx, gRPC INVALID_ARGUMENT / NOT_FOUND), the health check
answered throughout, and the server's memory stayed flat (the last quarter's
median RSS within ``--rss-growth-mb`` of the second quarter's).  Exit status
0 on a pass, 1 otherwise; the report goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import socket
import statistics
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from common import NotServing, ServeProcess

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY = ROOT / "examples" / "model_repository"
MODELS = ("add_sub", "add_sub_python")


@dataclass
class Tally:
    """What the clients saw; one per client, merged at the end."""

    valid: int = 0
    malformed: int = 0
    wrong: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    accepted_garbage: list[str] = field(default_factory=list)
    bad_kinds: Counter[str] = field(default_factory=Counter)

    def merge(self, other: Tally) -> None:
        self.valid += other.valid
        self.malformed += other.malformed
        self.wrong += other.wrong
        self.lost += other.lost
        self.accepted_garbage += other.accepted_garbage
        self.bad_kinds.update(other.bad_kinds)


class Server:
    """``naiad serve`` of the example repository on free loopback ports."""

    def __init__(self, log: Path) -> None:
        command = [
            sys.executable, "-m", "naiad", "serve", "--model-repository", str(REPOSITORY),
            "--http-address", "127.0.0.1", "--grpc-address", "127.0.0.1",
            "--http-port", "0", "--grpc-port", "0", "--metrics-port", "0",
        ]  # fmt: skip
        self.log = log.open("w")
        self.child = ServeProcess(command, on_line=lambda line: print(line, file=self.log))
        self.proc = self.child.process
        try:
            self.ports = self.child.wait_ready(120)  # it says which ports it bound
        except NotServing as exc:
            raise SystemExit(f"naiad serve did not start; see {log}") from exc

    def rss_mb(self) -> float:
        """The server's resident memory with its Python stub processes."""
        total = 0
        for pid in [self.proc.pid, *_children(self.proc.pid)]:
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            found = re.search(r"VmRSS:\s+(\d+) kB", status)
            total += int(found.group(1)) if found else 0
        return total / 1024

    def stop(self) -> None:
        self.child.stop(60)
        self.log.close()


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


# -- malformed requests: each returns a description of what came back -----------------


def _raw_http(port: int, data: bytes) -> int:
    """Send raw bytes, return the answer's status (0 when the server just closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        head = b""
        while b"\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                return 0
            head += chunk
        return int(head.split(b" ", 2)[1])


def _post(path: str, body: bytes, extra: bytes = b"") -> bytes:
    return (
        b"POST %s HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n%s"
        b"Content-Length: %d\r\n\r\n%s" % (path.encode(), extra, len(body), body)
    )


def _bad_http(port: int, rng: random.Random) -> tuple[str, int]:
    model = rng.choice(MODELS)
    path = f"/v2/models/{model}/infer"
    good = {"inputs": [{"name": f"INPUT{i}", "datatype": "FP32", "shape": [4],
                        "data": [1, 2, 3, 4]} for i in (0, 1)]}  # fmt: skip
    cases: dict[str, bytes] = {
        "broken json": _post(path, b'{"inputs": [{"name": '),
        "wrong shape": _post(
            path,
            json.dumps(
                {
                    **good,
                    "inputs": [
                        {**good["inputs"][0], "shape": [5], "data": [1, 2, 3, 4, 5]},
                        good["inputs"][1],
                    ],
                }
            ).encode(),
        ),  # fmt: skip
        "wrong datatype": _post(
            path,
            json.dumps(
                {**good, "inputs": [{**good["inputs"][0], "datatype": "INT32"}, good["inputs"][1]]}
            ).encode(),
        ),
        "unknown model": _post("/v2/models/no_such_model/infer", json.dumps(good).encode()),
        "missing input": _post(path, json.dumps({"inputs": good["inputs"][:1]}).encode()),
        "truncated body": _post(path, json.dumps(good).encode())[:-10],
        "huge header": _post(path, json.dumps(good).encode(), b"X-Big: " + b"a" * 20000 + b"\r\n"),
        "garbage": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(64),
    }
    kind = rng.choice(sorted(cases))
    status = _raw_http(port, cases[kind])
    return kind, status


def _bad_grpc(stub: Any, grpc_module: Any, pb: Any, rng: random.Random) -> tuple[str, str]:
    model = rng.choice(MODELS)
    kind = rng.choice(["wrong shape", "unknown model", "wrong datatype", "garbage protobuf"])
    if kind == "garbage protobuf":
        call = stub["raw"]
        try:
            call(bytes(rng.getrandbits(8) for _ in range(64)) + b"\xff\xff\xff", timeout=30)
        except grpc_module.RpcError as exc:
            return kind, exc.code().name
        return kind, "OK"
    request = pb.ModelInferRequest(model_name=model if kind != "unknown model" else "nope")
    for i in (0, 1):
        tensor = request.inputs.add(name=f"INPUT{i}", datatype="FP32", shape=[4])
        tensor.contents.fp32_contents.extend([1.0, 2.0, 3.0, 4.0])
    if kind == "wrong shape":
        request.inputs[0].shape[:] = [2, 2, 2]
    if kind == "wrong datatype":
        request.inputs[0].datatype = "INT64"
        request.inputs[0].contents.Clear()
        request.inputs[0].contents.int64_contents.extend([1, 2, 3, 4])
    try:
        stub["infer"](request, timeout=30)
    except grpc_module.RpcError as exc:
        return kind, exc.code().name
    return kind, "OK"


# -- the clients ----------------------------------------------------------------------


def client(protocol: str, ports: dict[str, int], seed: int, stop_at: float, bad: float) -> Tally:
    import grpc
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient
    from tritonclient.utils import InferenceServerException

    from naiad.frontends.grpc import grpc_service_pb2 as pb

    rng = random.Random(seed)
    tally = Tally()
    module = httpclient if protocol == "http" else grpcclient
    url = f"127.0.0.1:{ports[protocol]}"
    tc = module.InferenceServerClient(url)
    channel = grpc.insecure_channel(f"127.0.0.1:{ports['grpc']}")
    method = "/inference.GRPCInferenceService/ModelInfer"
    stub = {
        "infer": channel.unary_unary(method, pb.ModelInferRequest.SerializeToString,
                                     pb.ModelInferResponse.FromString),
        "raw": channel.unary_unary(method, lambda raw: raw, lambda raw: raw),
    }  # fmt: skip
    while time.monotonic() < stop_at:
        if rng.random() < bad:
            tally.malformed += 1
            if protocol == "http":
                kind, status = _bad_http(ports["http"], rng)
                ok = 400 <= status < 500
            else:
                kind, code = _bad_grpc(stub, grpc, pb, rng)
                status = code  # type: ignore[assignment]
                ok = code in ("INVALID_ARGUMENT", "NOT_FOUND")
            tally.bad_kinds[kind] += 1
            if not ok:
                tally.accepted_garbage.append(f"{protocol} {kind}: {status}")
            continue
        tally.valid += 1
        model = rng.choice(MODELS)
        a = rng.random() * np.arange(4, dtype=np.float32)
        b = np.float32(rng.random()) * np.ones(4, np.float32)
        inputs = [module.InferInput(f"INPUT{i}", [4], "FP32") for i in (0, 1)]
        inputs[0].set_data_from_numpy(a.astype(np.float32))
        inputs[1].set_data_from_numpy(b)
        try:
            result = tc.infer(model, inputs)
        except InferenceServerException as exc:
            tally.lost.append(f"{protocol} {model}: {exc}")
            continue
        if not (
            np.array_equal(result.as_numpy("OUTPUT0"), a.astype(np.float32) + b)
            and np.array_equal(result.as_numpy("OUTPUT1"), a.astype(np.float32) - b)
        ):
            tally.wrong.append(f"{protocol} {model}: {result.as_numpy('OUTPUT0')}")
    tc.close()
    channel.close()
    return tally


def health_watch(port: int, stop: threading.Event, failures: list[str]) -> None:
    import http.client

    while not stop.wait(0.5):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/v2/health/ready")
            if conn.getresponse().status != 200:
                failures.append("health: not ready")
            conn.close()
        except OSError as exc:
            failures.append(f"health: {exc!r}")


def soak(duration: float, clients: int, bad: float, rss_growth_mb: float, log: Path) -> int:
    server = Server(log)
    try:
        stop_at = time.monotonic() + duration
        results: list[Tally] = []
        lock = threading.Lock()

        def run(i: int) -> None:
            tally = client("http" if i % 2 == 0 else "grpc", server.ports, i, stop_at, bad)
            with lock:
                results.append(tally)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
        stop = threading.Event()
        health_failures: list[str] = []
        watch = threading.Thread(
            target=health_watch, args=(server.ports["http"], stop, health_failures)
        )
        for thread in [*threads, watch]:
            thread.start()
        rss: list[float] = []
        while time.monotonic() < stop_at:
            rss.append(server.rss_mb())
            time.sleep(1)
        for thread in threads:
            thread.join(120)
        stop.set()
        watch.join(10)
        alive = server.proc.poll() is None
    finally:
        server.stop()
    total = Tally()
    for tally in results:
        total.merge(tally)
    quarter = max(1, len(rss) // 4)
    early = statistics.median(rss[quarter : 2 * quarter] or rss)
    late = statistics.median(rss[-quarter:])
    print(f"soak: {clients} clients for {duration:.0f}s, {bad:.0%} malformed")
    print(f"  valid requests: {total.valid} ({total.valid / duration:.0f}/s), "
          f"wrong: {len(total.wrong)}, lost: {len(total.lost)}")  # fmt: skip
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(total.bad_kinds.items()))
    print(f"  malformed: {total.malformed} ({kinds}); "
          f"not answered with a client error: {len(total.accepted_garbage)}")  # fmt: skip
    print(f"  server RSS (MiB, with stubs): start {rss[0]:.0f}, second quarter {early:.0f}, "
          f"last quarter {late:.0f}, max {max(rss):.0f}")  # fmt: skip
    print(f"  health check failures: {len(health_failures)}; server alive: {alive}")
    problems = total.wrong + total.lost + total.accepted_garbage + health_failures
    if late - early > rss_growth_mb:
        problems.append(f"RSS grew {late - early:.0f} MiB (bound {rss_growth_mb:.0f})")
    if len(results) != clients or not alive:
        problems.append(f"{clients - len(results)} client(s) did not finish; alive={alive}")
    for problem in problems[:20]:
        print("  PROBLEM:", problem)
    print("PASS" if not problems else f"FAIL ({len(problems)} problems)")
    return 0 if not problems else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds (default 60)")
    parser.add_argument("--clients", type=int, default=20, help="client threads (default 20)")
    parser.add_argument("--bad", type=float, default=0.05, help="malformed share (0.05)")
    parser.add_argument("--rss-growth-mb", type=float, default=25.0, help="flat RSS bound")
    parser.add_argument("--log", type=Path, default=Path("soak-server.log"))
    args = parser.parse_args(argv)
    return soak(args.duration, args.clients, args.bad, args.rss_growth_mb, args.log)


if __name__ == "__main__":
    sys.exit(main())
