"""``naiad check`` as a CI job runs it: one line per problem, a summary, the exit status."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support import onnx_models
from support.onnx_models import write_config

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.frameworks,
    pytest.mark.filterwarnings(
        r"ignore:`torch\.jit\.(script|save)` is deprecated:DeprecationWarning"
    ),
]


class AddSub(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x + y, x - y


def naiad_check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "naiad.cli", "check", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_problem_only_a_load_finds_fails_the_job_on_one_line(repo: Path) -> None:
    model_file = repo / "add_sub" / "1" / "model.pt"
    model_file.parent.mkdir(parents=True)
    torch.jit.script(AddSub()).save(str(model_file))
    write_config(
        repo / "add_sub",
        'backend: "pytorch"\n'
        'input [{ name: "a" data_type: TYPE_FP32 dims: [4] },'
        ' { name: "b" data_type: TYPE_FP32 dims: [4] }]\n'
        'output [{ name: "OUTPUT__0" data_type: TYPE_FP32 dims: [4] }]\n',
    )
    onnx_models.identity(repo / "fine" / "1" / "model.onnx")
    result = naiad_check(str(repo))
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        f"{model_file}: model 'add_sub': input 'a' is neither an argument of forward() (x, y) "
        "nor named <name>__<index> (INPUT__0, INPUT__1...): name every input after "
        "forward()'s arguments, or every input by position",
        "checked 2 models in 1 repository: 1 problem",
    ]


def test_a_clean_repository_passes(repo: Path) -> None:
    onnx_models.identity(repo / "fine" / "1" / "model.onnx")
    result = naiad_check(str(repo))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == ["checked 1 model in 1 repository: no problems found"]


@pytest.mark.parametrize("args", [(), ("--no-such-flag", "models")])
def test_a_usage_error_exits_2(args: tuple[str, ...]) -> None:
    result = naiad_check(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "usage: naiad" in result.stderr and "error:" in result.stderr
