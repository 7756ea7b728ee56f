"""A server over HTTP/REST, with the binary tensor extension, on the tools' raw client.

Each connection is one :class:`~naiad.tools.client.Exchange` (a keep-alive
socket that writes one pre-encoded request and reads its response); the
other calls (config, statistics, shared memory) go through the same
:class:`~naiad.tools.client.HttpClient`.
"""

from __future__ import annotations

import contextlib
import json
import ssl
import time
from typing import Any
from urllib.parse import quote

from naiad.core import datatypes
from naiad.tools.client import Exchange, HttpClient, ServerError, Unreachable, server_message
from naiad.tools.perf.model import ModelInfo, Step
from naiad.tools.perf.settings import PerfError, PerfSettings
from naiad.tools.perf.shm import Regions
from naiad.tools.perf.stats import ServerStats
from naiad.tools.perf.targets import RequestFailed, Sequence


class HttpConnection:
    def __init__(self, target: HttpTarget, exchange: Exchange, outputs: int) -> None:
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
            raise RequestFailed(server_message(body, status))
        return sent - start, done - self.exchange.first_byte_ns

    async def close(self) -> None:
        if self.exchange.transport is not None:
            self.exchange.transport.close()


class HttpTarget:
    def __init__(self, settings: PerfSettings) -> None:
        self.settings = settings
        self.client = HttpClient(settings.address, headers=settings.headers,
                                 tls=ssl_context(settings), timeout_s=settings.timeout_s)  # fmt: skip
        name = quote(settings.model, safe="")
        version = f"/versions/{quote(settings.version, safe='')}" if settings.version else ""
        self.model_path = f"/v2/models/{name}{version}"
        headers = "".join(f"{k}: {v}\r\n" for k, v in settings.headers.items())
        self.head = (
            f"POST {self.model_path}/infer HTTP/1.1\r\nHost: {self.client.host}\r\n{headers}"
        )
        self.encoded: list[tuple[bytes, bytes]] = []  # per step: JSON inputs part, tensor bytes
        self.regions: Regions | None = None
        self._connections = 0
        self._cache: dict[tuple[int, int], bytes] = {}

    async def open(self) -> ModelInfo:
        try:
            await self.client.request("GET", "/v2/health/live")
            config = await self.client.json("GET", f"{self.model_path}/config")
        except Unreachable as exc:
            raise self._unreachable(exc) from None
        except ServerError as exc:
            raise PerfError(f"model '{self.settings.model}': {exc.message}") from None
        return ModelInfo.from_config(config)

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
        try:
            exchange = await self.client.connect()
        except Unreachable as exc:
            raise self._unreachable(exc) from None
        self._connections += 1
        if self.regions is not None:
            await self._register_outputs(self._connections - 1)
        return HttpConnection(self, exchange, self._connections - 1)

    async def statistics(self) -> ServerStats:
        try:
            stats = (await self.client.json("GET", f"{self.model_path}/stats"))["model_stats"]
        except (ServerError, Unreachable, KeyError, TypeError):
            return ServerStats()
        total = ServerStats()
        for entry in stats:
            total = total + ServerStats.from_json(entry)
        return total

    async def close(self) -> None:
        if self.regions is not None:
            for name in self.regions.names():
                with contextlib.suppress(Unreachable):  # a server gone has no regions left
                    path = f"/v2/systemsharedmemory/region/{name}/unregister"
                    await self.client.request("POST", path)
            self.regions.close()

    def _unreachable(self, exc: Unreachable) -> PerfError:
        return PerfError(f"no server answers at {self.client.address} over HTTP ({exc})")

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
        try:
            await self.client.call("POST", path, {"key": key, "offset": 0, "byte_size": size})
        except (ServerError, Unreachable) as exc:
            raise PerfError(f"--shared-memory system: the server refused region {name}: "
                            f"{exc}") from None  # fmt: skip


def ssl_context(settings: PerfSettings) -> ssl.SSLContext | None:
    """The TLS context of an ``https://`` -u or the ``--ssl-https-*`` flags, else None."""
    if not settings.url.startswith("https://") and not settings.ssl:
        return None
    context = ssl.create_default_context(cafile=settings.ssl.get("ca") or None)
    if settings.ssl.get("verify_peer") == "0":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if settings.ssl.get("cert"):
        context.load_cert_chain(settings.ssl["cert"], settings.ssl.get("key") or None)
    return context
