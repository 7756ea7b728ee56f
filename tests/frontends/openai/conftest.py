"""One naiad server with the OpenAI test models, started once for this folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from frontends.openai.models import build


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from naiad import Server

    server = Server(
        model_repository=build(tmp_path_factory.mktemp("openai") / "models"),
        http_port=0,
        grpc_port=0,
        allow_metrics=False,
        strict_readiness=False,
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def base_url(server: object) -> str:
    return f"http://127.0.0.1:{server.http_port}/v1"  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def port(server: object) -> int:
    return server.http_port  # type: ignore[attr-defined]


@pytest.fixture
def log_file(tmp_path: Path) -> Path:
    return tmp_path / "words.log"
