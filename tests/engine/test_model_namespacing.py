"""``--model-namespacing``: the same model name in two repositories, each served; an ensemble's
step resolves to the model of its own repository; the plain name is ambiguous (Triton's
error), the namespaced one ``<repository>/<name>`` is not; a load or unload by the plain name
acts on every repository's model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from engine.residency_models import X, ensemble, infer_grpc, infer_http, python_model
from support.served import Served, naiad_serve
from tritonclient.utils import InferenceServerException

pytestmark = pytest.mark.protocol


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    a, b = tmp_path_factory.mktemp("repo_a"), tmp_path_factory.mktemp("repo_b")
    python_model(a, "x", 1, size=0)
    python_model(b, "x", 2, size=0)
    python_model(a, "solo", 3, size=0)
    ensemble(a, "pipe_a", "x")
    ensemble(b, "pipe_b", "x")
    return a, b


@pytest.fixture(scope="module")
def served(repos: tuple[Path, Path]) -> Iterator[Served]:
    a, b = repos
    flags = ("--model-repository", str(b), "--model-namespacing", "true")
    flags += ("--model-control-mode", "explicit", "--load-model", "*")
    with naiad_serve(a, *flags) as server:
        yield server


def test_each_ensemble_calls_the_model_of_its_own_repository(served: Served) -> None:
    np.testing.assert_array_equal(infer_http(served.http_port, "pipe_a"), X + 1)
    np.testing.assert_array_equal(infer_grpc(served.grpc_port, "pipe_b"), X + 2)
    np.testing.assert_array_equal(infer_http(served.http_port, "solo"), X + 3)


def test_the_plain_name_is_ambiguous_the_namespaced_one_is_not(
    served: Served, repos: tuple[Path, Path]
) -> None:
    with pytest.raises(InferenceServerException, match="namespace must be provided") as info:
        infer_http(served.http_port, "x")
    assert info.value.status() == "400"
    a, b = repos
    np.testing.assert_array_equal(infer_grpc(served.grpc_port, f"{a}/x"), X + 1)
    np.testing.assert_array_equal(infer_grpc(served.grpc_port, f"{b}/x"), X + 2)


def test_the_index_and_the_config_say_which_repository(
    served: Served, repos: tuple[Path, Path]
) -> None:
    a, b = repos
    client = httpclient.InferenceServerClient(f"127.0.0.1:{served.http_port}")
    try:
        rows = {r["name"]: r.get("state") for r in client.get_model_repository_index()}
        config = client.get_model_config("pipe_a")
    finally:
        client.close()
    assert rows[f"{a}/x"] == rows[f"{b}/x"] == "READY"
    assert "x" not in rows and rows["solo"] == "READY"
    (step,) = config["ensemble_scheduling"]["step"]
    assert (step["model_name"], step["model_namespace"]) == ("x", str(a))


def test_unload_and_load_by_the_plain_name_act_on_every_repository(
    served: Served, repos: tuple[Path, Path]
) -> None:
    a, b = repos
    # A namespaced name holds "/": gRPC carries it, an HTTP path could not.
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{served.grpc_port}")
    try:
        client.unload_model("x")
        assert not client.is_model_ready(f"{a}/x") and not client.is_model_ready(f"{b}/x")
        client.load_model("x")
        assert client.is_model_ready(f"{a}/x") and client.is_model_ready(f"{b}/x")
        client.load_model("pipe_b")  # its step came back: the ensemble serves again
    finally:
        client.close()
    np.testing.assert_array_equal(infer_grpc(served.grpc_port, "pipe_b"), X + 2)


def test_without_namespacing_the_name_is_a_duplicate(repos: tuple[Path, Path]) -> None:
    a, b = repos
    flags = ("--model-repository", str(b), "--exit-on-error", "false")
    with naiad_serve(a, *flags) as served:
        with pytest.raises(InferenceServerException, match="pipe_a|x"):
            infer_http(served.http_port, "pipe_a")
        np.testing.assert_array_equal(infer_http(served.http_port, "solo"), X + 3)
