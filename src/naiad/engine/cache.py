"""Triton's response cache (``--cache-config local,size=N``): answers without executing.

The key is a hash of the model name, version and every input's name,
datatype, shape and bytes, as in Triton; the value is what the backend
produced (all outputs, before the per-request shaping), so requests asking
for different outputs share an entry.  Entries are evicted least recently
used first when the cached bytes would exceed the configured size.

Only models with ``response_cache { enable: true }`` use it, and never
decoupled or sequence models.  Hits count as successes (with their lookup
time as ``cache_hit``) but not as inferences or executions; a miss is
charged its lookup and insertion time as ``cache_miss``.
"""

from __future__ import annotations

import collections
import hashlib
import time
from typing import TYPE_CHECKING

import numpy as np

from naiad.core import datatypes
from naiad.core.errors import InvalidArgument
from naiad.core.types import InferenceRequest, InferenceResponse, OutputTensor

if TYPE_CHECKING:
    from naiad.config import ModelConfig
    from naiad.core.stats import ModelStats

#: (name, datatype, shape, read-only array) of one cached output.
CachedOutput = tuple[str, datatypes.DataType, tuple[int, ...], np.ndarray]


def parse_size(text: str) -> int:
    """A byte size: ``1048576``, ``64KB``, ``16MB``, ``1GB``."""
    units = {"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    upper = text.strip().upper()
    for suffix, factor in units.items():
        if upper.endswith(suffix) and upper[: -len(suffix)].isdigit():
            return int(upper[: -len(suffix)]) * factor
    if upper.isdigit():
        return int(upper)
    raise InvalidArgument(f"invalid cache size '{text}'")


def cache_from_config(cache_config: dict[str, dict[str, str]]) -> ResponseCache | None:
    """The server's cache from ``--cache-config`` entries, None when not configured."""
    if not cache_config:
        return None
    unknown = [name for name in cache_config if name != "local"]
    if unknown:
        raise InvalidArgument(f"unsupported cache '{unknown[0]}' (naiad has the 'local' cache)")
    settings = cache_config["local"]
    return ResponseCache(parse_size(settings.get("size", "0")))


def uses_cache(config: ModelConfig) -> bool:
    """Whether a model's responses may be cached."""
    decoupled = config.HasField("model_transaction_policy") and (
        config.model_transaction_policy.decoupled
    )
    return (
        config.response_cache.enable and not decoupled and not config.HasField("sequence_batching")
    )


def _nbytes(array: np.ndarray) -> int:
    if array.dtype == np.object_:
        return sum(len(x) if isinstance(x, (bytes, str)) else 8 for x in array.reshape(-1)) + 64
    return array.nbytes + 64


class ResponseCache:
    """An LRU map from request hashes to backend outputs, bounded by bytes."""

    def __init__(self, size_bytes: int) -> None:
        self.capacity = size_bytes
        self.used = 0
        self._entries: collections.OrderedDict[bytes, tuple[list[CachedOutput], int]] = (
            collections.OrderedDict()
        )

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def key(name: str, version: int, request: InferenceRequest) -> bytes:
        digest = hashlib.blake2b(digest_size=20)
        digest.update(f"{name}\0{version}\0".encode())
        for tensor in sorted(request.inputs, key=lambda t: t.name):
            array = tensor.array()
            digest.update(f"{tensor.name}\0{tensor.datatype.name}\0{tensor.shape}\0".encode())
            if array.dtype == np.object_:
                digest.update(datatypes.serialize_bytes(array))
            else:
                digest.update(np.ascontiguousarray(array).data)
        return digest.digest()

    def lookup(self, key: bytes) -> list[OutputTensor] | None:
        found = self._entries.get(key)
        if found is None:
            return None
        self._entries.move_to_end(key)
        return [OutputTensor(n, dt, shape, data) for n, dt, shape, data in found[0]]

    def insert(self, key: bytes, outputs: list[OutputTensor]) -> None:
        stored: list[CachedOutput] = []
        size = 0
        for tensor in outputs:
            if tensor.data is None:
                return  # went to shared memory: nothing to keep
            array = np.array(tensor.data, copy=True)
            array.flags.writeable = False
            stored.append((tensor.name, tensor.datatype, tuple(tensor.shape), array))
            size += _nbytes(array)
        if size > self.capacity:
            return
        old = self._entries.pop(key, None)
        if old is not None:
            self.used -= old[1]
        while self.used + size > self.capacity and self._entries:
            _, (_, evicted) = self._entries.popitem(last=False)
            self.used -= evicted
        self._entries[key] = (stored, size)
        self.used += size

    # -- the core's use ----------------------------------------------------------

    def answer(self, name: str, version: int, request: InferenceRequest, stats: ModelStats) -> bool:
        """Answer ``request`` from the cache (True), or arrange to store its response.

        On a miss ``request.response_sink`` is wrapped so that the backend's
        successful response is inserted before the core shapes it.
        """
        start = time.monotonic_ns()
        key = self.key(name, version, request)
        outputs = self.lookup(key)
        sink = request.response_sink
        assert sink is not None
        if outputs is not None:
            stats.cache_hit.add(time.monotonic_ns() - start)
            request.queue_ns = 0
            sink(InferenceResponse(outputs=outputs))
            return True
        lookup_ns = time.monotonic_ns() - start
        stats.cache_miss.add(lookup_ns)

        def store(response: InferenceResponse) -> None:
            if response.error is None and response.final:
                began = time.monotonic_ns()
                self.insert(key, response.outputs)
                stats.cache_miss.ns += time.monotonic_ns() - began
            sink(response)

        request.response_sink = store
        return False
