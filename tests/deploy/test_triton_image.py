"""naiad's images in place of Triton's: container specs written for Triton's image,
run unchanged but for the image, must serve.

Triton's image runs its arguments as a command, so KServe's Triton runtime
(kserve ``config/runtimes/kserve-tritonserver.yaml``) and NVIDIA's Helm charts
(server repository, ``deploy/*/templates/deployment.yaml``) start it with
``args: [tritonserver, <flags>]``; a spec may also set ``command: [tritonserver]``,
which skips the entrypoint. Each runs here as the container would (test_docker.py
says how): the image's ENTRYPOINT, its scripts on PATH, mounts mapped onto
examples/model_repository, and only the ports moved to free ones.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest
import tomllib
from deploy_helpers import (
    EXAMPLES,
    ROOT,
    Dockerfile,
    add_sub_answers,
    command_line,
    image_bin,
    image_env,
    mapped,
    running,
    wait_ready,
    with_flag,
)
from support.processes import free_port, listening

pytestmark = pytest.mark.e2e

CPU = Dockerfile.read(ROOT / "Dockerfile")
GPU = Dockerfile.read(ROOT / "deploy" / "docker" / "Dockerfile.gpu")

#: KServe's Triton runtime: its container's args, as the ClusterServingRuntime has them.
KSERVE = ["tritonserver", "--model-store=/mnt/models", "--grpc-port=9000", "--http-port=8080",
          "--allow-grpc=true", "--allow-http=true"]  # fmt: skip

#: NVIDIA's Helm chart for AWS (deploy/aws): args, with the chart's default repository path.
HELM_ARGS = ["tritonserver", "--model-store=/models", "--model-control-mode=poll",
             "--repository-poll-secs=5"]  # fmt: skip

#: Each spec: the container's command (None: the image's ENTRYPOINT), its args, and the
#: mount the model repository is at.
SPECS = {
    "docker-run": (None, CPU.exec_form("CMD"), "/models"),
    "kserve-runtime": (None, KSERVE, "/mnt/models"),
    "helm-args": (None, HELM_ARGS, "/models"),
    "command-tritonserver": (["tritonserver"], ["--model-repository=/models"], "/models"),
}


@pytest.mark.parametrize("spec", list(SPECS))
def test_a_spec_for_tritons_image_serves_and_drains(spec: str, tmp_path: Path) -> None:
    command, args, mount = SPECS[spec]
    ports = {"--http-port": free_port(), "--grpc-port": free_port(), "--metrics-port": free_port()}
    args = mapped(args, {mount: EXAMPLES})
    for flag, port in ports.items():
        args = with_flag(args, flag, str(port))
    argv = (command or CPU.exec_form("ENTRYPOINT")) + args
    env = image_env(CPU, tmp_path / "shims")
    log = tmp_path / "serve.log"
    http, grpc = ports["--http-port"], ports["--grpc-port"]
    with running(argv, env, log) as proc:
        wait_ready(f"http://127.0.0.1:{http}/v2/health/ready", proc, log)
        add_sub_answers(http, grpc)
        # Each script exec'd the next: the container's process (PID 1) is the server
        # itself, so SIGTERM reaches it and it drains.
        assert command_line(proc.pid)[1:4] == ["-m", "naiad", "serve"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()
    assert not listening(http) and not listening(grpc)


def run(argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``argv`` as the image's ENTRYPOINT + arguments, in a folder without a repository."""
    env = image_env(CPU, tmp_path / "shims")
    return subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_no_arguments_run_naiad_serve(tmp_path: Path) -> None:
    """With nothing after the image (and CMD emptied), the entrypoint runs bare
    `naiad serve`: here that finds no repository in the working folder and says so."""
    result = run(CPU.exec_form("ENTRYPOINT"), tmp_path)
    assert result.returncode == 1, result.stderr
    assert "model repository not found: examples/model_repository" in result.stderr


@pytest.mark.parametrize(
    "argv",
    [["--model-repository=/nowhere", "--bogus"], ["tritonserver", "--bogus"]],
    ids=["options", "tritonserver"],
)
def test_options_and_tritonserver_reach_naiad_serves_parser(argv: list[str], tmp_path: Path):
    result = run(CPU.exec_form("ENTRYPOINT") + argv, tmp_path)
    assert result.returncode == 2  # a usage error, as tritonserver's
    assert "unrecognized arguments: --bogus" in result.stderr


def test_another_command_runs_as_given(tmp_path: Path) -> None:
    """`docker run IMAGE sh -c ...`, or a debugging shell, is not handed to naiad."""
    result = run([*CPU.exec_form("ENTRYPOINT"), "sh", "-c", 'echo "$0 $1"', "a", "b"], tmp_path)
    assert (result.returncode, result.stdout) == (0, "a b\n")


def test_both_images_have_the_entrypoint_and_tritonserver() -> None:
    for dockerfile in (CPU, GPU):
        [entrypoint] = dockerfile.exec_form("ENTRYPOINT")
        assert image_bin(dockerfile) == ROOT / "deploy" / "docker" / "bin"
        for script in (entrypoint, "tritonserver"):
            path = image_bin(dockerfile) / script
            assert path.stat().st_mode & 0o111, f"{path} is not executable"
            # POSIX sh: the slim and CUDA bases have no bash guarantee; -n parses only.
            assert path.read_text().startswith("#!/bin/sh\n")
            assert subprocess.run(["sh", "-n", str(path)]).returncode == 0


def test_the_wheel_has_no_tritonserver() -> None:
    """Only the images have `tritonserver`: from the wheel it would shadow a real Triton."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert list(project["scripts"]) == ["naiad"]
