"""A naiad server with the shared case models, started once for the HTTP suite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cases.models import build_repository

#: small enough that the oversized-body test stays cheap
MAX_INPUT = 1 << 20


@pytest.fixture(scope="session")
def case_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_repository(tmp_path_factory.mktemp("cases") / "models")


@pytest.fixture(scope="session")
def http_server(case_repo: Path) -> Iterator[object]:
    from naiad import Server

    server = Server(
        model_repository=case_repo,
        http_port=0,
        http_max_input_size=MAX_INPUT,
        allow_client_shm=True,
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def http_url(http_server: object) -> str:
    """``host:port`` as tritonclient wants it (no scheme)."""
    return f"127.0.0.1:{http_server.http_port}"  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def http_port(http_server: object) -> int:
    return http_server.http_port  # type: ignore[attr-defined]
