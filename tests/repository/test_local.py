"""Model repositories on disk: versions, policies, duplicates, labels."""

from __future__ import annotations

import numpy as np
import pytest
from support import onnx_models
from support.onnx_models import write_config

from naiad.config import model_config_pb2 as pb
from naiad.repository import ModelSource, scan, select_versions

pytestmark = pytest.mark.protocol


def test_numeric_version_folders_only(tmp_path):
    for name in ("1", "2", "10", "01", "abc", ".git"):
        (tmp_path / "m" / name).mkdir(parents=True)
    (tmp_path / "m" / "3").write_text("a file, not a version")
    assert ModelSource("m", tmp_path / "m", tmp_path).versions() == [1, 2, 10]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("", [3]),
        ("latest { num_versions: 2 }", [2, 3]),
        ("all { }", [1, 2, 3]),
        ("specific { versions: [1, 3] }", [1, 3]),
    ],
)
def test_version_policies(policy, expected):
    from google.protobuf import text_format

    p = text_format.Parse(policy, pb.ModelVersionPolicy())
    assert select_versions(p, [1, 2, 3]) == expected


def test_duplicates_across_repositories_are_reported(tmp_path):
    for repo in ("a", "b"):
        (tmp_path / repo / "same" / "1").mkdir(parents=True)
    (tmp_path / "a" / "only_a" / "1").mkdir(parents=True)
    found = scan([tmp_path / "a", tmp_path / "b", tmp_path / "missing"])
    assert list(found.models) == ["only_a"]
    assert found.duplicates["same"] == [tmp_path / "a" / "same", tmp_path / "b" / "same"]
    assert found.missing == [tmp_path / "missing"]


def test_served_versions_follow_the_policy(repo, serve):
    for v in (1, 2, 3):
        onnx_models.identity(repo / "m" / str(v) / "model.onnx")
    write_config(
        repo / "m", 'backend: "onnxruntime"\nversion_policy: { latest { num_versions: 2 } }\n'
    )
    server = serve(repo)
    assert server.model_metadata("m")["versions"] == ["2", "3"]
    x = np.ones((1, 16), np.float32)
    assert server.infer("m", {"INPUT0": x}, version=2)["OUTPUT0"].tolist() == x.tolist()
    served = server.infer("m", {"INPUT0": x}, version=np.int64(3))  # as numpy computes one
    assert served["OUTPUT0"].tolist() == x.tolist()
    with pytest.raises(Exception, match="version 1 is not found"):
        server.infer("m", {"INPUT0": x}, version=1)


def test_two_repositories_merge_and_duplicates_are_unavailable(tmp_path, serve):
    a, b = tmp_path / "a", tmp_path / "b"
    onnx_models.identity(a / "m1" / "1" / "model.onnx")
    onnx_models.identity(b / "m2" / "1" / "model.onnx")
    onnx_models.identity(a / "dup" / "1" / "model.onnx")
    onnx_models.identity(b / "dup" / "1" / "model.onnx")
    from naiad import Server

    with Server(model_repository=[a, b]) as server:
        assert server.model_ready("m1") and server.model_ready("m2")
        index = {e.name: e for e in server._call(server.dataplane.repository_index())}
        assert index["dup"].state == "UNAVAILABLE"
        failed = dict(server.dataplane.failed_models())
        assert str(a / "dup") in failed["dup"] and str(b / "dup") in failed["dup"]
        assert not server.is_ready()  # strict readiness: a model failed


def test_broken_config_names_file_and_line(repo, serve):
    onnx_models.identity(repo / "bad" / "1" / "model.onnx")
    write_config(repo / "bad", 'backend: "onnxruntime"\nmax_batch_size: 8\nbogus_field: 3\n')
    onnx_models.identity(repo / "good" / "1" / "model.onnx")
    server = serve(repo)
    failed = dict(server.dataplane.failed_models())
    reason = failed["bad"]
    # Named from the repository's root: clients read reasons too (the log has the full path).
    assert reason.startswith("bad/config.pbtxt:3: ") and str(repo) not in reason
    assert "bogus_field" in reason
    assert server.model_ready("good")
