"""Triton's trace file: JSON records of sampled requests, written off the event loop.

With ``log_frequency`` N > 0 every N traces go to ``<file>.<index>`` (a
JSON array each, index from 0); with 0 they are appended to ``<file>``,
which is closed (``]``) when the server stops.  One writer thread per
server keeps file I/O off the loop and the records in order.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

log = logging.getLogger("naiad")

_COMPACT = {"separators": (",", ":"), "ensure_ascii": False}


class TraceFile:
    """One trace file path; indexed files and the main file share its name."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._index = 0
        self._started = False
        self._lock = threading.Lock()

    def save(self, records: Sequence[str], indexed: bool) -> None:
        """Write ``records`` (blocking): a new indexed file, or onto the main file."""
        body = ",".join(records)
        try:
            with self._lock:
                if indexed:
                    name = f"{self.path}.{self._index}"
                    self._index += 1
                    with open(name, "w", encoding="utf-8") as f:
                        f.write("[" + body + "]")
                    return
                with open(self.path, "a" if self._started else "w", encoding="utf-8") as f:
                    f.write(("," if self._started else "[") + body)
                self._started = True
        except OSError as exc:
            log.error("failed creating trace file: %s", exc)

    def close(self) -> None:
        with self._lock:
            if self._started:
                try:
                    with open(self.path, "a", encoding="utf-8") as f:
                        f.write("]")
                except OSError as exc:
                    log.error("failed closing trace file: %s", exc)
                self._started = False


class TraceWriter:
    """Runs :class:`TraceFile` writes on one worker thread, in submission order."""

    def __init__(self) -> None:
        self._files: dict[str, TraceFile] = {}
        self._executor: ThreadPoolExecutor | None = None

    def file(self, path: str) -> TraceFile:
        found = self._files.get(path)
        if found is None:
            found = self._files[path] = TraceFile(path)
        return found

    def submit(self, file: TraceFile, records: list[str], indexed: bool) -> None:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="naiad-trace")
        self._executor.submit(file.save, records, indexed)

    def close(self) -> None:
        """Finish every pending write and close the main files (blocking)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        for file in self._files.values():
            file.close()


def trace_records(
    trace_id: int,
    model_name: str,
    model_version: int,
    request_id: str,
    parent_id: int,
    stamps: Sequence[tuple[str, int]],
    tensors: Sequence[tuple[str, str, Any, str]] = (),
) -> list[str]:
    """The JSON records of one trace, as Triton's tracer writes them.

    ``tensors`` are (activity, name, array, datatype) for the TENSORS level;
    they are placed after the first timestamp of their phase.
    """
    head: dict[str, Any] = {
        "id": trace_id,
        "model_name": model_name,
        "model_version": model_version,
    }
    if request_id:
        head["request_id"] = request_id
    if parent_id:
        head["parent_id"] = parent_id
    out = [json.dumps(head, **_COMPACT)]  # type: ignore[arg-type]
    inputs = [t for t in tensors if t[0] == "TENSOR_QUEUE_INPUT"]
    outputs = [t for t in tensors if t[0] != "TENSOR_QUEUE_INPUT"]
    for name, ns in stamps:
        if name == "REQUEST_END" and outputs:
            out.extend(_tensor_record(trace_id, *t) for t in outputs)
            outputs = []
        out.append(f'{{"id":{trace_id},"timestamps":[{{"name":{json.dumps(name)},"ns":{ns}}}]}}')
        if name == "QUEUE_START" and inputs:
            out.extend(_tensor_record(trace_id, *t) for t in inputs)
            inputs = []
    out.extend(_tensor_record(trace_id, *t) for t in inputs + outputs)
    return out


def _tensor_record(trace_id: int, activity: str, name: str, array: Any, datatype: str) -> str:
    data = _tensor_data(array, datatype)
    shape = ",".join(str(d) for d in getattr(array, "shape", ()))
    record = {
        "id": trace_id,
        "activity": activity,
        "tensor": {"name": name, "data": data, "shape": shape, "dtype": datatype},
    }
    return json.dumps(record, **_COMPACT)  # type: ignore[arg-type]


def _tensor_data(array: Any, datatype: str) -> str:
    """Comma-separated elements as Triton prints them (FP16/BF16 left empty)."""
    if array is None or datatype in ("FP16", "BF16"):
        return ""
    flat = np.asarray(array).reshape(-1)
    if datatype == "BYTES":
        return ",".join(
            '"' + (x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x)) + '"'
            for x in flat
        )
    if datatype == "BOOL":
        return ",".join("1" if x else "0" for x in flat)
    if datatype in ("FP32", "FP64"):
        return ",".join(format(float(x), "g") for x in flat)
    return ",".join(str(int(x)) for x in flat)
