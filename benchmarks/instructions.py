"""Instructions per request, counted by callgrind: a cost the machine's noise does not move.

Throughput on a shared VM moves by tens of percent from hour to hour;
callgrind counts the instructions a piece of code executes, the same on a
busy machine as on an idle one.  Each target drives one request path
in-process, with no sockets, under ``valgrind --tool=callgrind``; counting is
switched on (``callgrind_control -i on``) after a warm-up and off after the
measured requests:

* ``naiad-http``: a binary-tensor ``/infer`` request through naiad's HTTP
  protocol handler (parse, decode, validate, schedule, ONNX Runtime, encode)
  into a transport that only counts writes;
* ``naiad-grpc``: a ``ModelInfer`` rpc through naiad's HTTP/2 transport,
  from the HEADERS and DATA frames a client sends to the frames of the
  answer (HPACK, framing, the call, protobuf, the data plane);
* ``naiad-core``: the protocol-neutral part alone (``DataPlane.infer`` with
  the request already built, as the frontends hand it over);
* ``bare-http``: the bare httptools server of ``bare_servers.py``, for scale;
* ``naiad-python``: a binary-tensor ``/infer`` request to the example
  ``add_sub_python`` model in its stub process (``execution-mode=process``;
  ``auto`` would run it in the server's), counted in the server and in the
  stub separately (two rows); the stub's socket is real, the client's is not;
* ``naiad-python-auto``: the same request to the same model where ``naiad
  serve`` runs it by default (``execution-mode=auto``: in the server's
  process, on its event loop), the headline's path.

The model is ``http_bench.py``'s ONNX identity except for ``naiad-python``.
Under valgrind every model looks slow, and the scheduler would move it to the
instance's thread; the inner process raises the inline threshold so that the
count follows the path a real server takes for this model (inline on the
event loop).  Use it to compare two versions of the hot path; it includes the
Python interpreter's work, so compare like with like (same Python, same
packages).

    python benchmarks/instructions.py [--requests 500] [--targets naiad-http naiad-python ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from common import checkout_env

TARGETS = (
    "naiad-http",
    "naiad-grpc",
    "naiad-core",
    "bare-http",
    "naiad-python",
    "naiad-python-auto",
)
WARMUP = 50


def _http_request(model: str = "identity_fp32", inputs: tuple[str, ...] = ("INPUT0",)) -> bytes:
    """A binary-tensor ``/infer`` request: FP32 inputs (``[1,16]`` for the identity, else
    ``[4]``) and every output binary."""
    shape = [1, 16] if model == "identity_fp32" else [4]
    data = np.arange(int(np.prod(shape)), dtype=np.float32).tobytes()
    outputs = [name.replace("INPUT", "OUTPUT") for name in inputs]
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": name,
                    "shape": shape,
                    "datatype": "FP32",
                    "parameters": {"binary_data_size": len(data)},
                }
                for name in inputs
            ],
            "outputs": [{"name": name, "parameters": {"binary_data": True}} for name in outputs],
        }
    ).encode()
    body = header + data * len(inputs)
    return (
        b"POST /v2/models/%s/infer HTTP/1.1\r\nHost: localhost\r\n"
        b"Content-Type: application/octet-stream\r\n"
        b"Inference-Header-Content-Length: %d\r\nContent-Length: %d\r\n\r\n"
        % (model.encode(), len(header), len(body))
    ) + body


class CountingTransport:
    """Takes what a protocol writes and counts it; the rest of a transport does nothing."""

    def __init__(self) -> None:
        self.writes = 0
        self.written: asyncio.Future[None] | None = None
        self.failed = b""  # the start of a response that was not a 200, if any

    def write(self, data: bytes) -> None:
        head = bytes(data[:12])  # bytes or a memoryview
        if head.startswith(b"HTTP/1.1 ") and head != b"HTTP/1.1 200":
            self.failed = bytes(data[:300])
        self.writes += 1
        if self.written is not None and not self.written.done():
            self.written.set_result(None)

    def writelines(self, data: Any) -> None:
        self.write(bytes(data[0]) if data else b"")

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...


def _grpc_request() -> bytes:
    """A serialized ``ModelInferRequest`` as perf_analyzer sends it: raw input, named output."""
    from naiad.frontends.grpc import grpc_service_pb2 as pb

    msg = pb.ModelInferRequest(model_name="identity_fp32")
    msg.inputs.add(name="INPUT0", datatype="FP32", shape=[1, 16])
    msg.outputs.add(name="OUTPUT0")
    msg.raw_input_contents.append(np.arange(16, dtype=np.float32).tobytes())
    return msg.SerializeToString()


class Http2Transport(CountingTransport):
    """Counts the writes that end a stream; a write without an OK status is a failure."""

    OK = b"\x0bgrpc-status\x010"  # the literal header field naiad's transport writes

    def write(self, data: bytes) -> None:
        data = bytes(data)
        if self.OK not in data:
            if b"grpc-status" in data:
                self.failed = data[:300]
            return  # SETTINGS, WINDOW_UPDATE: not an answer
        self.writes += 1
        if self.written is not None and not self.written.done():
            self.written.set_result(None)


def _http2_requests(n: int) -> list[bytes]:
    """``n`` ModelInfer calls as a gRPC client sends them: HEADERS and DATA on streams 1, 3, ...

    ``hpack``'s encoder indexes the fields, so from the second call on the header block is
    all indexed, as perf_analyzer's (grpc core's) is once its table is warm.
    """
    import hpack

    from naiad.frontends.grpc.http2 import wire

    encoder = hpack.Encoder()
    message = _grpc_request()
    body = b"\x00" + len(message).to_bytes(4, "big") + message
    out = []
    for i in range(n):
        stream = 2 * i + 1
        block = encoder.encode(
            [(":method", "POST"), (":scheme", "http"), (":authority", "127.0.0.1"),
             (":path", "/inference.GRPCInferenceService/ModelInfer"),
             ("content-type", "application/grpc"), ("te", "trailers"),
             ("user-agent", "grpc-c++/1.67.1 grpc-c/44.0.0 (linux; chttp2)")]
        )  # fmt: skip
        out.append(
            wire.frame(wire.HEADERS, wire.END_HEADERS, stream, block)
            + wire.frame(wire.DATA, wire.END_STREAM, stream, body)
        )
    out[0] = wire.PREFACE + wire.frame(wire.SETTINGS, 0, 0) + out[0]
    return out


async def _drive_http2(server: Any, requests: int) -> int:
    """Feed ModelInfer calls to naiad's HTTP/2 connection one at a time, as ``_drive_protocol``."""
    from naiad.frontends.grpc.http2.connection import Connection

    loop = asyncio.get_running_loop()
    transport = Http2Transport()
    conn = Connection(server.frontends["grpc"].server)
    conn.connection_made(transport)
    calls = _http2_requests(WARMUP + requests)
    for n, data in enumerate(calls):
        if n == WARMUP:
            _count(True)
        before = transport.writes
        transport.written = loop.create_future()
        conn.data_received(data)
        if transport.writes == before:
            await transport.written
    _count(False)
    if transport.failed:
        raise RuntimeError(f"a call failed: {transport.failed!r}")
    return transport.writes


_COUNTED = [os.getpid()]  # and a stub's, once started


def _count(on: bool) -> None:
    for pid in _COUNTED:
        subprocess.run(
            ["callgrind_control", "-i", "on" if on else "off", str(pid)],
            check=True,
            capture_output=True,
        )


async def _drive_protocol(protocol: Any, requests: int, data: bytes | None = None) -> int:
    """Feed ``requests`` requests one at a time; each is answered before the next.

    A request answered later (its batch ran on the instance's thread) is
    awaited, not polled, so the count does not depend on how long it took.
    """
    loop = asyncio.get_running_loop()
    transport = CountingTransport()
    protocol.connection_made(transport)
    data = data or _http_request()
    for n in range(WARMUP + requests):
        if n == WARMUP:
            _count(True)
        before = transport.writes
        transport.written = loop.create_future()
        protocol.data_received(data)
        if transport.writes == before:
            await transport.written
    _count(False)
    if transport.failed:  # an error answer costs less than inference: do not count it
        raise RuntimeError(f"a request failed: {transport.failed!r}")
    return transport.writes


def _connection(server: Any) -> Any:
    """A connection of the server's HTTP frontend, driven without a socket."""
    from naiad.frontends.http.protocol import HttpConnection

    frontend = server.frontends["http"]
    return HttpConnection(frontend, frontend.app, frontend.limits)


async def _inner(target: str, repo: Path, requests: int) -> None:
    if target == "bare-http":
        from bare_servers import BareHttp

        writes = await _drive_protocol(BareHttp(), requests)
        print(f"answered {writes}", flush=True)
        return
    from naiad import Server
    from naiad.backends.base import ModelInstance
    from naiad.core import datatypes
    from naiad.core.types import InferenceRequest, InferInput

    ModelInstance.inline_max_ns = 10**12  # see the module docstring
    mode = "auto" if target == "naiad-python-auto" else "process"

    # No metrics: their poller runs on a timer, and under valgrind a timer fires
    # ever more often per request, which would make the count depend on speed.
    server = Server(
        model_repository=repo,
        http_port=0 if target in ("naiad-http", "naiad-python", "naiad-python-auto") else None,
        grpc_port=0 if target == "naiad-grpc" else None,
        allow_metrics=False,
        allow_cpu_metrics=False,
        allow_gpu_metrics=False,
        backend_config={"python": {"execution-mode": mode}},
    )
    await server.start_async()
    try:
        if target == "naiad-http":
            writes = await _drive_protocol(_connection(server), requests)
        elif target in ("naiad-python", "naiad-python-auto"):
            model = server.dataplane.registry.get("add_sub_python")
            if mode == "process":
                _COUNTED.extend(instance.pid for instance in model.instances)
            data = _http_request("add_sub_python", ("INPUT0", "INPUT1"))
            writes = await _drive_protocol(_connection(server), requests, data)
        elif target == "naiad-grpc":
            writes = await _drive_http2(server, requests)
        else:
            data = np.arange(16, dtype=np.float32).reshape(1, 16)
            writes = 0
            for n in range(WARMUP + requests):
                if n == WARMUP:
                    _count(True)
                tensor = InferInput("INPUT0", datatypes.FP32, (1, 16), data)
                await server.dataplane.infer(InferenceRequest("identity_fp32", [tensor]))
                writes += 1
            _count(False)
        print(f"answered {writes}", flush=True)
    finally:
        await server.stop_async()


def _measure(target: str, repo: Path, requests: int, out: Path) -> list[float]:
    """Instructions per request, one figure per counted process (the server first)."""
    command = [
        "valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}.%p",
        "--trace-children=yes", "--trace-children-skip=*callgrind_control*",
        sys.executable, __file__, "--inner", target, "--repo", str(repo),
        "--requests", str(requests),
    ]  # fmt: skip
    # The script's own folder is on sys.path already (common, bare_servers).
    done = subprocess.run(command, capture_output=True, text=True, env=checkout_env(), timeout=1800)
    answered = re.search(r"answered (\d+)", done.stdout)
    # One line per process; helpers that never switched counting on collect 0.
    collected = [
        (int(pid), int(n)) for pid, n in re.findall(r"==(\d+)== Collected : (\d+)", done.stderr)
    ]
    if done.returncode != 0 or answered is None or not collected:
        raise RuntimeError(f"{target} failed:\n{done.stdout}\n{done.stderr[-3000:]}")
    if int(answered.group(1)) != WARMUP + requests:
        raise RuntimeError(f"{target} answered {answered.group(1)} of {WARMUP + requests}")
    return [n / requests for _, n in sorted(collected) if n]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--targets", nargs="+", choices=TARGETS, default=list(TARGETS))
    parser.add_argument("--inner", choices=TARGETS, help=argparse.SUPPRESS)
    parser.add_argument("--repo", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        import uvloop

        uvloop.run(_inner(args.inner, args.repo, args.requests))
        return 0
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind (with callgrind_control) is not installed")
        return 2
    from http_bench import build_repositories
    from python_backend_bench import repository

    with tempfile.TemporaryDirectory(prefix="naiad-instructions-") as tmp:
        naiad_repo, _ = build_repositories(Path(tmp))
        python_repo = repository(Path(tmp), thread=False)
        print("| target | instructions per request |")
        print("|---|---|")
        for target in args.targets:
            repo = python_repo if target.startswith("naiad-python") else naiad_repo
            counts = _measure(target, repo, args.requests, Path(tmp) / f"{target}.out")
            names = [target] if len(counts) == 1 else [f"{target} (server)", f"{target} (stub)"]
            for name, per in zip(names, counts, strict=True):
                print(f"| {name} | {per / 1000:.0f}k |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
