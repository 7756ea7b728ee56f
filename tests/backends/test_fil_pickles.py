"""Pickled scikit-learn models load only with the operator's consent.

Unpickling runs whatever code the file holds, so a repository's author (or a
client of the load API) could run code in the server by shipping a
``model.pkl``.  Here such a file would leave a mark on disk if it ever ran.
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from support.onnx_models import write_config
from tritonclient.utils import InferenceServerException

pytest.importorskip("sklearn")
pytest.importorskip("treelite")

import treelite.sklearn  # noqa: E402
from sklearn.ensemble import RandomForestClassifier  # noqa: E402

pytestmark = [pytest.mark.protocol, pytest.mark.frameworks]

FEATURES = 4


class LeavesAMark:
    """A pickle that, when loaded, creates a file: the code an attacker would run."""

    def __init__(self, mark: Path) -> None:
        self.mark = mark

    def __reduce__(self) -> tuple[object, tuple[str, int]]:
        return (os.open, (str(self.mark), os.O_CREAT | os.O_WRONLY))


def config(model_type: str, *extra: str) -> str:
    return (
        'backend: "fil"\nmax_batch_size: 8\n'
        f'input [{{ name: "input__0" data_type: TYPE_FP32 dims: [{FEATURES}] }}]\n'
        'output [{ name: "output__0" data_type: TYPE_FP32 dims: [1] }]\n'
        "instance_group [{ kind: KIND_CPU }]\n"
        f'parameters {{ key: "model_type" value: {{ string_value: "{model_type}" }} }}\n'
        'parameters { key: "is_classifier" value: { string_value: "true" } }\n' + "".join(extra)
    )


def put(repo: Path, name: str, filename: str, data: bytes, text: str) -> None:
    (repo / name / "1").mkdir(parents=True)
    (repo / name / "1" / filename).write_bytes(data)
    write_config(repo / name, text)


@pytest.fixture
def models(repo: Path, tmp_path: Path) -> Path:
    x = np.random.default_rng(0).random((40, FEATURES)).astype(np.float32)
    forest = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0)
    forest.fit(x, (x[:, 0] > 0.5).astype(int))
    mark = tmp_path / "pickle-ran"
    put(repo, "evil", "model.pkl", pickle.dumps(LeavesAMark(mark)), config("sklearn"))
    # A config parameter of the same name is no consent: the model's author wrote it.
    asks = 'parameters { key: "allow-pickle" value: { string_value: "true" } }\n'
    put(repo, "forest", "model.pkl", pickle.dumps(forest), config("sklearn", asks))
    checkpoint = treelite.sklearn.import_model(forest).serialize_bytes()
    put(repo, "forest_tl", "checkpoint.tl", checkpoint, config("treelite_checkpoint"))
    return mark


def test_without_consent_no_pickle_is_opened_and_other_models_load(repo, models, serve):
    server = serve(repo, http=True)
    failed = dict(server.dataplane.failed_models())
    for name in ("evil", "forest"):
        reason = failed[f"{name} version 1"]
        assert "--backend-config fil,allow-pickle=true" in reason, reason
        assert "runs any code it holds" in reason
    assert not models.exists(), "the pickle ran"
    assert server.model_ready("forest_tl")
    row = np.full((1, FEATURES), 0.9, np.float32)
    assert server.infer("forest_tl", {"input__0": row})["output__0"].tolist() == [[1.0]]


def test_the_load_api_cannot_give_consent(repo, models, serve):
    server = serve(repo, http=True, model_control_mode="explicit", load_models=("forest_tl",))
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    override = json.dumps(
        {
            "backend": "fil",
            "max_batch_size": 8,
            "input": [{"name": "input__0", "data_type": "TYPE_FP32", "dims": [FEATURES]}],
            "output": [{"name": "output__0", "data_type": "TYPE_FP32", "dims": [1]}],
            "parameters": {
                "model_type": {"string_value": "sklearn"},
                "is_classifier": {"string_value": "true"},
                "allow-pickle": {"string_value": "true"},
            },
        }
    )
    for name in ("forest", "evil"):
        with pytest.raises(InferenceServerException, match="allow-pickle=true"):
            client.load_model(name, config=override)
    assert not models.exists(), "the pickle ran"
    assert client.is_model_ready("forest_tl")
    client.close()


def test_with_the_operators_consent_pickles_load(repo, models, serve):
    server = serve(repo, backend_config={"fil": {"allow-pickle": "true"}})
    assert server.model_ready("forest")
    row = np.full((1, FEATURES), 0.9, np.float32)
    assert server.infer("forest", {"input__0": row})["output__0"].tolist() == [[1.0]]
    assert models.exists()  # the operator asked for it: the evil file did run


def test_a_misspelt_consent_is_an_error_not_a_no(repo, models, serve):
    server = serve(repo, backend_config={"fil": {"allow-pickle": "ture"}})
    failed = dict(server.dataplane.failed_models())
    assert "allow-pickle=ture: expected true or false" in failed["forest version 1"]
    assert not models.exists()


def test_naiad_check_refuses_pickles_as_serve_does_and_never_opens_one(repo, models, capsys):
    from naiad.cli import main

    assert main(["check", str(repo)]) == 1
    lines = capsys.readouterr().out.splitlines()
    for name in ("evil", "forest"):
        line = next(x for x in lines if f"/{name}/1/model.pkl" in x)
        assert "--backend-config fil,allow-pickle=true" in line, line
    assert not any("forest_tl" in x for x in lines[:-1]), lines
    assert not models.exists(), "naiad check ran the pickle"

    # With the consent serve would have, check opens them as the load does: the forest
    # passes, and the evil file runs and is no estimator.
    assert main(["check", str(repo), "--backend-config", "fil,allow-pickle=true"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and "/evil/1/model.pkl" in lines[0], lines
    assert "not a scikit-learn estimator" in lines[0]
    assert models.exists()
