"""A naiad server with the shared case models, started once for the gRPC suite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cases.models import build_repository


@pytest.fixture(scope="session")
def grpc_case_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_repository(tmp_path_factory.mktemp("grpc_cases") / "models")


@pytest.fixture(scope="session")
def grpc_server(grpc_case_repo: Path) -> Iterator[object]:
    from naiad import Server

    server = Server(model_repository=grpc_case_repo, grpc_port=0, allow_client_shm=True)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def grpc_url(grpc_server: object) -> str:
    """``host:port`` as tritonclient wants it."""
    return f"127.0.0.1:{grpc_server.grpc_port}"  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def grpcio_url(grpc_case_repo: Path) -> Iterator[str]:
    """The same models served on the ``grpc.aio`` transport (``--grpc-transport grpcio``)."""
    from naiad import Server

    server = Server(
        model_repository=grpc_case_repo, grpc_port=0, grpc_transport="grpcio", allow_client_shm=True
    )
    server.start()
    yield f"127.0.0.1:{server.grpc_port}"
    server.stop()
