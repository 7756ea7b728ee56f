"""The load API cannot reach outside the model's folder, and its errors do not say where
the server keeps its files.

A config sent with ``load_model`` names the files the server opens or runs;
today's attack was ``default_model_filename: "../../../evil/1/model.py"``,
which imported and ran that file, and ``/etc/passwd`` for an ONNX model,
whose error told whether the file existed.  Over HTTP and gRPC, with
tritonclient.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import onnx_models
from support.onnx_models import write_config
from tritonclient.utils import InferenceServerException

pytestmark = pytest.mark.protocol

EVIL = """
from pathlib import Path
Path({marker!r}).write_text("ran")

class TritonPythonModel:
    def execute(self, requests):
        return []
"""


@pytest.fixture
def setup(tmp_path: Path, serve: Any) -> tuple[Any, Path, Path]:
    """An explicit-mode server over ``repo``; next to it, a folder the client must not reach."""
    repo = tmp_path / "models"
    onnx_models.identity(repo / "identity" / "1" / "model.onnx", shape=[-1, 4])
    write_config(repo / "identity", 'backend: "onnxruntime"\nmax_batch_size: 8\n')
    marker = tmp_path / "evil-ran"
    evil = tmp_path / "evil" / "1"
    evil.mkdir(parents=True)
    (evil / "model.py").write_text(EVIL.format(marker=str(marker)))
    server = serve(repo, http=True, grpc=True, model_control_mode="explicit")
    return server, repo, marker


def clients(server: Any) -> list[Any]:
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    return [
        httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}"),
        grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}"),
    ]


def refused(client: Any, name: str, config: dict[str, Any]) -> str:
    with pytest.raises(InferenceServerException) as failure:
        client.load_model(name, config=json.dumps(config))
    status = str(failure.value.status())
    assert status in ("400", "StatusCode.INVALID_ARGUMENT"), status
    return str(failure.value.message())


@pytest.mark.parametrize(
    "filename", ["../../../evil/1/model.py", "../../evil/1/model.py", "1/../../../evil/1/model.py"]
)
def test_a_model_file_outside_the_folder_never_runs(
    setup: tuple[Any, Path, Path], filename: str
) -> None:
    server, repo, marker = setup
    for client in clients(server):
        message = refused(
            client, "identity", {"backend": "python", "default_model_filename": filename}
        )
        assert f"file name '{filename}' must be a relative path inside the version folder" in (
            message
        )
        assert str(repo) not in message and str(repo.parent) not in message
        client.close()
    assert not marker.exists()


def test_an_absolute_model_file_is_refused_without_an_oracle(setup: tuple[Any, Path, Path]) -> None:
    """Whether the file exists or not, the answer is the same and names no server path."""
    server, repo, _ = setup
    for client in clients(server):
        answers = {
            refused(
                client,
                "identity",
                {"backend": "onnxruntime", "default_model_filename": filename},
            ).replace(filename, "<name>")
            for filename in ("/etc/passwd", "/no/such/file.onnx")
        }
        assert len(answers) == 1, answers
        assert "must be a relative path inside the version folder" in answers.pop()
        client.close()


def test_other_file_names_of_a_config_are_checked(setup: tuple[Any, Path, Path]) -> None:
    server, _, _ = setup
    config = {
        "backend": "onnxruntime",
        "max_batch_size": 8,
        "output": [
            {"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4],
             "label_filename": "../../../../etc/passwd"}
        ],
    }  # fmt: skip
    for client in clients(server):
        message = refused(client, "identity", config)
        assert "output[0].label_filename" in message
        assert "must be a relative path inside the model folder" in message
        client.close()


def test_an_interpreter_outside_the_model_folder_is_refused(
    setup: tuple[Any, Path, Path], tmp_path: Path
) -> None:
    server, _, marker = setup
    config = {
        "backend": "python",
        "parameters": {"EXECUTION_ENV_PATH": {"string_value": str(tmp_path / "evil")}},
    }
    for client in clients(server):
        message = refused(client, "identity", config)
        assert "EXECUTION_ENV_PATH" in message and "must be inside the model folder" in message
        client.close()
    assert not marker.exists()


def test_a_load_failure_names_files_from_the_repository_root(
    setup: tuple[Any, Path, Path],
) -> None:
    """A broken model file: the reason says which file, not where the repository lives."""
    server, repo, _ = setup
    (repo / "broken" / "1").mkdir(parents=True)
    (repo / "broken" / "1" / "model.onnx").write_bytes(b"not an onnx file")
    write_config(repo / "broken", 'backend: "onnxruntime"\nmax_batch_size: 8\n')
    for client in clients(server):
        with pytest.raises(InferenceServerException) as failure:
            client.load_model("broken")
        message = str(failure.value.message())
        assert "broken/1/model.onnx" in message
        assert str(repo) not in message
        index = client.get_model_repository_index()
        rows = (
            index
            if isinstance(index, list)
            else json.loads(
                json.dumps([{"name": m.name, "reason": m.reason} for m in index.models])
            )
        )
        reasons = [r.get("reason", "") for r in rows if r["name"] == "broken"]
        assert reasons and all(str(repo) not in r for r in reasons)
        client.close()


def test_a_config_inside_the_folder_still_loads(setup: tuple[Any, Path, Path]) -> None:
    server, _, _ = setup
    for client in clients(server):
        client.load_model(
            "identity",
            config=json.dumps({"backend": "onnxruntime", "max_batch_size": 8,
                               "default_model_filename": "./model.onnx"}),
        )  # fmt: skip
        assert client.is_model_ready("identity")
        client.close()
