"""Fixtures shared by every test folder."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """An empty model repository folder for one test."""
    path = tmp_path / "models"
    path.mkdir()
    return path


@pytest.fixture
def serve() -> Iterator[object]:
    """Start ``naiad.Server``s on free loopback ports; they stop after the test.

    ``serve(repo, http=True, grpc=True, **settings)`` returns the started server.
    """
    from naiad import Server

    started: list[Server] = []

    def start(repository: Path, *, http: bool = False, grpc: bool = False, **settings: object):
        server = Server(
            model_repository=repository,
            http_port=0 if http else None,
            grpc_port=0 if grpc else None,
            **settings,
        )
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
