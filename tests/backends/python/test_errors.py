"""Errors surface as Triton's Python backend words them (python_backend.md §6)."""

from __future__ import annotations

import pytest
from pybackend_helpers import A, B
from pybackend_models import add_sub

from naiad.core.errors import Kind, NaiadError

pytestmark = pytest.mark.protocol

MODES = ["process", "thread"]


def _model(body: str) -> str:
    return (
        "import numpy as np\nimport triton_python_backend_utils as pb_utils\n\n"
        "class TritonPythonModel:\n"
        "    def execute(self, requests):\n" + body
    )


def _fail(server, model="add_sub") -> NaiadError:
    with pytest.raises(NaiadError) as info:
        server.infer(model, {"INPUT0": A, "INPUT1": B})
    return info.value


@pytest.mark.parametrize("mode", MODES)
def test_exception_in_execute(repo, serve, mode):
    add_sub(repo, mode=mode, source=_model("        return [1 / 0 for r in requests]\n"))
    error = _fail(serve(repo))
    assert error.kind is Kind.INTERNAL
    assert error.message.startswith(
        "Failed to process the request(s) for model 'add_sub_0_0', message: "
        "ZeroDivisionError: division by zero"
    )
    assert "model.py(6): <listcomp>" in error.message or "model.py(6)" in error.message


@pytest.mark.parametrize("mode", MODES)
def test_an_error_pb_utils_raises_shows_only_the_models_frames(repo, serve, mode):
    """As in Triton, whose pb_utils is C++: the frames are the model's, none of pb_utils'
    (whose classes may be compiled, and then name their source by a relative path)."""
    body = "        return [pb_utils.InferenceResponse([pb_utils.Tensor('', np.ones(1))])]\n"
    add_sub(repo, mode=mode, source=_model(body))
    message = _fail(serve(repo)).message
    assert message.startswith(
        "Failed to process the request(s) for model 'add_sub_0_0', message: "
        "TritonModelException: Tensor name cannot be an empty string.\n\nAt:\n  "
    ), message
    frames = message.split("At:\n")[1].splitlines()
    assert len(frames) == 1 and frames[0].endswith("model.py(6): execute"), message


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("body", "text"),
    [
        (
            "        return tuple()\n",
            "Expected a list in the execute return, found type '<class 'tuple'>'.",
        ),
        (
            "        return []\n",
            "Number of InferenceResponse objects do not match the number of InferenceRequest "
            "objects. InferenceRequest(s) size is:1, and InferenceResponse(s) size is:0\n",
        ),
        (
            "        return ['x' for r in requests]\n",
            "Expected an 'InferenceResponse' object in the execute function return list, found "
            "type '<class 'str'>'.",
        ),
    ],
)
def test_wrong_return_values(repo, serve, mode, body, text):
    add_sub(repo, mode=mode, source=_model(body))
    error = _fail(serve(repo))
    assert error.kind is Kind.INTERNAL
    assert error.message == (
        f"Failed to process the request(s) for model 'add_sub_0_0', message: {text}"
    )


@pytest.mark.parametrize("mode", MODES)
def test_triton_error_code_travels(repo, serve, mode):
    add_sub(
        repo,
        mode=mode,
        source=_model(
            "        return [pb_utils.InferenceResponse(error=pb_utils.TritonError(\n"
            "            'no such thing', pb_utils.TritonError.NOT_FOUND)) for r in requests]\n"
        ),
    )
    error = _fail(serve(repo))
    assert error.kind is Kind.NOT_FOUND
    assert error.message == "no such thing"


@pytest.mark.parametrize("mode", MODES)
def test_initialize_failure_makes_the_model_unavailable(repo, serve, mode):
    add_sub(
        repo,
        mode=mode,
        source=(
            "class TritonPythonModel:\n"
            "    def initialize(self, args):\n"
            "        raise RuntimeError('no weights here')\n"
            "    def execute(self, requests):\n"
            "        return []\n"
        ),
    )
    server = serve(repo, strict_readiness=False)
    reasons = dict(server.dataplane.failed_models())
    reason = reasons["add_sub version 1"]
    assert reason.startswith("Internal: RuntimeError: no weights here")  # as Triton's index
    assert "model.py(3): initialize" in reason
    assert not server.model_ready("add_sub", "1")


@pytest.mark.parametrize("mode", MODES)
def test_syntax_error_fails_the_load(repo, serve, mode):
    add_sub(repo, mode=mode, source="class TritonPythonModel:\n    def execute(self, r)\n")
    server = serve(repo, strict_readiness=False)
    assert "SyntaxError" in dict(server.dataplane.failed_models())["add_sub version 1"]


@pytest.mark.parametrize("mode", MODES)
def test_sender_in_default_mode(repo, serve, mode):
    add_sub(
        repo,
        mode=mode,
        source=_model(
            "        for r in requests:\n"
            "            s = r.get_response_sender()\n"
            "            a = r.inputs()[0].as_numpy()\n"
            "            s.send(pb_utils.InferenceResponse([pb_utils.Tensor('OUTPUT0', a),\n"
            "                                               pb_utils.Tensor('OUTPUT1', a)]))\n"
            "            try:\n"
            "                s.send(pb_utils.InferenceResponse([]))\n"
            "            except pb_utils.TritonModelException as e:\n"
            "                assert 'cannot send more than one response' in str(e), str(e)\n"
            "            s.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)\n"
            "        return [None for r in requests]\n"
        ),
    )
    out = serve(repo).infer("add_sub", {"INPUT0": A, "INPUT1": B})
    assert out["OUTPUT0"].tolist() == A.tolist()
