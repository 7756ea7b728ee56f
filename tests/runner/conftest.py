"""Runners in every mode over one repository: the example models plus one hyphenated name.

``runner`` is parametrised over the four modes, so a test written once runs
against the embedded core, a gRPC child server, an HTTP child server and a
running server reached by URL.  The servers load every model in explicit
mode, so tests may unload and load (and must leave things as they found them).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from scheduling.sequence_models import acc_state

import naiad

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "model_repository"
MODES = ("embedded", "grpc", "http", "url")
CLI_ARGS = ["--model-control-mode=explicit", "--load-model=*", "--allow-client-shm=true"]


@pytest.fixture(scope="session")
def runner_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example repository, ``add-sub`` (a copy of ``add_sub`` under a name that is
    not a Python identifier) and ``acc_state`` (a sequence model with implicit state)."""
    repo = tmp_path_factory.mktemp("runner") / "models"
    shutil.copytree(EXAMPLES, repo)
    shutil.copytree(EXAMPLES / "add_sub", repo / "add-sub")
    config = repo / "add-sub" / "config.pbtxt"
    config.write_text(config.read_text().replace('name: "add_sub"', 'name: "add-sub"'))
    acc_state(repo)
    return repo


@pytest.fixture(scope="session", params=MODES)
def runner(request: pytest.FixtureRequest, runner_repo: Path) -> Iterator[naiad.Runner]:
    mode = request.param
    if mode == "url":
        server = naiad.Server(
            model_repository=runner_repo,
            http_port=0,
            metrics_port=0,
            model_control_mode="explicit",
            load_models=("*",),
            allow_client_shm=True,
        )
        server.start()
        try:
            with naiad.Runner(
                "url",
                url=f"http://127.0.0.1:{server.http_port}",
                metrics_url=f"http://127.0.0.1:{server.metrics_port}/metrics",
            ) as started:
                yield started
        finally:
            server.stop()
        return
    with naiad.Runner(
        mode, model_repository=runner_repo, server_type=mode, cli_args=CLI_ARGS
    ) as started:
        yield started
