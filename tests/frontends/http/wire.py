"""Raw HTTP helpers for what tritonclient cannot send (malformed, pipelined, chunked...)."""

from __future__ import annotations

import http.client
import json
import socket
from typing import Any

import numpy as np


def infer_body(
    inputs: list[tuple[str, str, list[int], np.ndarray | list[Any]]],
    binary: bool = True,
    **extra: Any,
) -> tuple[bytes, dict[str, str]]:
    """A request body and its headers: ``(name, datatype, shape, data)`` per input."""
    header: dict[str, Any] = {"inputs": [], **extra}
    blobs = []
    for name, dt, shape, data in inputs:
        item: dict[str, Any] = {"name": name, "datatype": dt, "shape": shape}
        if binary:
            raw = np.asarray(data).tobytes()
            item["parameters"] = {"binary_data_size": len(raw)}
            blobs.append(raw)
        else:
            item["data"] = data.reshape(-1).tolist() if isinstance(data, np.ndarray) else data
        header["inputs"].append(item)
    text = json.dumps(header).encode()
    headers = {"Inference-Header-Content-Length": str(len(text))} if binary else {}
    return text + b"".join(blobs), headers


def request(
    conn: http.client.HTTPConnection,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    data = response.read()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, data


def error_of(data: bytes) -> str:
    doc = json.loads(data)
    assert list(doc) == ["error"], doc
    return doc["error"]


def read_response(sock: socket.socket, buffer: bytearray) -> tuple[int, dict[str, str], bytes]:
    """One Content-Length framed response off a raw socket (``buffer`` keeps leftovers)."""
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        assert chunk, "connection closed"
        buffer += chunk
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0"))
    body = bytearray(rest)
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "connection closed"
        body += chunk
    buffer[:] = body[length:]
    return status, headers, bytes(body[:length])
