"""Fixtures of the metrics tests (helpers live in ``helpers.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from metrics.helpers import FakeBackend


@pytest.fixture
def fake_backend() -> FakeBackend:
    backend = FakeBackend()
    return backend


@pytest.fixture
def start_fake(fake_backend: FakeBackend):
    """Start servers whose ``fake`` backend is ``fake_backend``; stopped after the test."""
    from naiad import Server

    started: list[Server] = []

    def start(repo: Path, **settings: object) -> Server:
        server = Server(repo, metrics_port=0, **settings)
        server.dataplane.backends.register("fake", lambda: fake_backend)  # type: ignore[arg-type]
        server.start()
        started.append(server)
        return server

    yield start
    fake_backend.release.set()
    for server in started:
        server.stop()
