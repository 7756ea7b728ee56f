"""A server over HTTP/REST, with the binary tensor extension, on raw keep-alive sockets.

A general HTTP client costs tens of microseconds per request in Python,
which at concurrency 1 would measure the client.  Each connection here is an
asyncio protocol that writes one pre-encoded request and reads the response
head and ``Content-Length`` bytes, nothing more.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from typing import Any
from urllib.parse import quote

from naiad.core import datatypes
from naiad.tools.perf.model import ModelInfo, Step
from naiad.tools.perf.settings import PerfError, PerfSettings
from naiad.tools.perf.shm import Regions
from naiad.tools.perf.stats import ServerStats
from naiad.tools.perf.targets import RequestFailed, Sequence


class _Exchange(asyncio.Protocol):
    """One keep-alive connection: a request out, a response in, in turn."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self.first_byte_ns = 0
        self.lost: Exception | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass

    def data_received(self, data: bytes) -> None:
        if not self.buffer:
            self.first_byte_ns = time.perf_counter_ns()
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0 or self.waiter is None:
            return
        head = bytes(self.buffer[:end]).decode("latin-1")
        length = 0
        for line in head.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        if len(self.buffer) < end + 4 + length:
            return
        status = int(head.split(" ", 2)[1])
        body = bytes(self.buffer[end + 4 : end + 4 + length])
        del self.buffer[: end + 4 + length]
        waiter, self.waiter = self.waiter, None
        if not waiter.done():
            waiter.set_result((status, body))

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = ConnectionError("the server closed the connection")
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(self.lost)

    async def send(self, data: bytes) -> tuple[int, bytes]:
        if self.lost is not None:
            raise self.lost
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.buffer.clear()
        self.transport.write(data)
        return await self.waiter


class HttpConnection:
    def __init__(self, target: HttpTarget, exchange: _Exchange, outputs: int) -> None:
        self.target = target
        self.exchange = exchange
        self.outputs = outputs  # this connection's output region slot (shared memory)

    async def infer(self, step: int, sequence: Sequence) -> tuple[int, int]:
        start = time.perf_counter_ns()
        data = self.target.request(step, sequence, self.outputs)
        sent = time.perf_counter_ns()
        status, body = await self.exchange.send(data)
        done = time.perf_counter_ns()
        if status != 200:
            raise RequestFailed(_error(body))
        return sent - start, done - self.exchange.first_byte_ns

    async def close(self) -> None:
        if self.exchange.transport is not None:
            self.exchange.transport.close()


class HttpTarget:
    def __init__(self, settings: PerfSettings) -> None:
        self.settings = settings
        host, _, port = settings.address.rpartition(":")
        self.host, self.port = host or "localhost", int(port or 80)
        self.ssl = _ssl_context(settings)
        name = quote(settings.model, safe="")
        version = f"/versions/{quote(settings.version, safe='')}" if settings.version else ""
        self.model_path = f"/v2/models/{name}{version}"
        headers = "".join(f"{k}: {v}\r\n" for k, v in settings.headers.items())
        self.head = f"POST {self.model_path}/infer HTTP/1.1\r\nHost: {self.host}\r\n{headers}"
        self.encoded: list[tuple[bytes, bytes]] = []  # per step: JSON inputs part, tensor bytes
        self.regions: Regions | None = None
        self._connections = 0
        self._cache: dict[tuple[int, int], bytes] = {}

    async def open(self) -> ModelInfo:
        try:
            status, body = await self.call("GET", "/v2/health/live")
        except OSError as exc:
            raise PerfError(
                f"no server answers at {self.host}:{self.port} over HTTP ({exc.strerror or exc})"
            ) from None
        status, body = await self.call("GET", f"{self.model_path}/config")
        if status != 200:
            raise PerfError(f"model '{self.settings.model}': {_error(body)}")
        return ModelInfo.from_config(json.loads(body))

    def prepare(self, model: ModelInfo, streams: list[list[Step]]) -> None:
        steps = [step for stream in streams for step in stream]
        self.outputs = model.outputs
        types = {t.name: t.datatype for t in model.inputs}
        if self.settings.shared_memory == "system":
            self.regions = Regions(steps, len(model.outputs), self.settings)
        for index, step in enumerate(steps):
            described, raw = [], []
            for name, array in step.items():
                datatype = types[name]
                tensor: dict[str, Any] = {"name": name, "shape": list(array.shape),
                                          "datatype": datatype}  # fmt: skip
                if self.regions is not None:
                    tensor["parameters"] = self.regions.input_parameters(index, name)
                else:
                    data = (datatypes.serialize_bytes(array) if datatype == "BYTES"
                            else array.tobytes())  # fmt: skip
                    tensor["parameters"] = {"binary_data_size": len(data)}
                    raw.append(data)
                described.append(tensor)
            self.encoded.append((json.dumps(described).encode(), b"".join(raw)))

    def request(self, step: int, sequence: Sequence, slot: int) -> bytes:
        """Request ``step`` (encoded once: only a sequence's flags change between calls)."""
        step %= len(self.encoded)
        if sequence is None:
            key = (step, slot)
            cached = self._cache.get(key)
            if cached is None:
                cached = self._cache[key] = self._encode(step, None, slot)
            return cached
        return self._encode(step, sequence, slot)

    def _encode(self, step: int, sequence: Sequence, slot: int) -> bytes:
        inputs, raw = self.encoded[step]
        if self.regions is not None:
            outputs = [{"name": o, "parameters": self.regions.output_parameters(slot, i)}
                       for i, o in enumerate(self.outputs)]  # fmt: skip
        else:
            outputs = [{"name": o, "parameters": {"binary_data": True}} for o in self.outputs]
        parameters = {}
        if sequence is not None:
            parameters = {"sequence_id": sequence[0], "sequence_start": sequence[1],
                          "sequence_end": sequence[2]}  # fmt: skip
        header = (b'{"inputs":' + inputs + b',"outputs":' + json.dumps(outputs).encode()
                  + b',"parameters":' + json.dumps(parameters).encode() + b"}")  # fmt: skip
        return (
            (
                f"{self.head}Content-Type: application/octet-stream\r\n"
                f"Inference-Header-Content-Length: {len(header)}\r\n"
                f"Content-Length: {len(header) + len(raw)}\r\n\r\n"
            ).encode()
            + header
            + raw
        )

    async def connect(self) -> HttpConnection:
        if self.regions is not None and self._connections == 0:
            await self._register()
        loop = asyncio.get_running_loop()
        _, exchange = await loop.create_connection(_Exchange, self.host, self.port, ssl=self.ssl)
        self._connections += 1
        if self.regions is not None:
            await self._register_outputs(self._connections - 1)
        return HttpConnection(self, exchange, self._connections - 1)

    async def statistics(self) -> ServerStats:
        status, body = await self.call("GET", f"{self.model_path}/stats")
        if status != 200:
            return ServerStats()
        stats = json.loads(body).get("model_stats", [])
        total = ServerStats()
        for entry in stats:
            total = total + ServerStats.from_json(entry)
        return total

    async def close(self) -> None:
        if self.regions is not None:
            for name in self.regions.names():
                await self.call("POST", f"/v2/systemsharedmemory/region/{name}/unregister")
            self.regions.close()

    async def call(self, method: str, path: str, document: Any = None) -> tuple[int, bytes]:
        """One request of the protocol's other endpoints, on a connection of its own."""
        body = b"" if document is None else json.dumps(document).encode()
        headers = "".join(f"{k}: {v}\r\n" for k, v in self.settings.headers.items())
        data = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\n{headers}"
                f"Content-Length: {len(body)}\r\n\r\n").encode() + body  # fmt: skip
        loop = asyncio.get_running_loop()
        transport, exchange = await asyncio.wait_for(
            loop.create_connection(_Exchange, self.host, self.port, ssl=self.ssl),
            self.settings.timeout_s,
        )
        try:
            return await asyncio.wait_for(exchange.send(data), self.settings.timeout_s)
        finally:
            transport.close()

    async def _register(self) -> None:
        assert self.regions is not None
        name, key, size = self.regions.inputs_region()
        await self._register_one(name, key, size)

    async def _register_outputs(self, slot: int) -> None:
        assert self.regions is not None
        name, key, size = self.regions.outputs_region(slot)
        await self._register_one(name, key, size)

    async def _register_one(self, name: str, key: str, size: int) -> None:
        path = f"/v2/systemsharedmemory/region/{name}/register"
        status, body = await self.call("POST", path, {"key": key, "offset": 0, "byte_size": size})
        if status != 200:
            raise PerfError(f"--shared-memory system: the server refused region {name}: "
                            f"{_error(body)}")  # fmt: skip


def _error(body: bytes) -> str:
    try:
        return str(json.loads(body).get("error", body.decode(errors="replace")))
    except ValueError:
        return body.decode(errors="replace")


def _ssl_context(settings: PerfSettings) -> ssl.SSLContext | None:
    if not settings.url.startswith("https://") and not settings.ssl:
        return None
    context = ssl.create_default_context(cafile=settings.ssl.get("ca") or None)
    if settings.ssl.get("verify_peer") == "0":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if settings.ssl.get("cert"):
        context.load_cert_chain(settings.ssl["cert"], settings.ssl.get("key") or None)
    return context
