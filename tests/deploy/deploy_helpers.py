"""What the deploy tests share: reading a Dockerfile and manifests, validating objects
against Kubernetes' schemas, and running a container's command line as a process.

No container runtime or cluster runs here, so a container is run as what it would
run: its command line, its environment, and its mounts mapped onto local folders.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml
from support.processes import stop

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
CHART = DEPLOY / "helm" / "naiad"
EXAMPLES = ROOT / "examples" / "model_repository"

#: Kubernetes versions the manifests are validated against: the oldest the chart
#: declares support for (Chart.yaml kubeVersion: >=1.25), and the newest
#: kubernetes-validate ships schemas for.
KUBERNETES_VERSIONS = ("1.25.0", "1.37.0")


@dataclass
class Instruction:
    keyword: str
    arguments: str
    line: int


@dataclass
class Dockerfile:
    """A Dockerfile's instructions, continuation lines joined, comments dropped."""

    path: Path
    instructions: list[Instruction] = field(default_factory=list)

    @classmethod
    def read(cls, path: Path) -> Dockerfile:
        parsed = cls(path)
        pending: list[str] = []
        start = 0
        for number, raw in enumerate(path.read_text().splitlines(), 1):
            line = raw.strip()
            if not pending and (not line or line.startswith("#")):
                continue
            if pending and line.startswith("#"):
                continue
            if not pending:
                start = number
            if line.endswith("\\"):
                pending.append(line[:-1].strip())
                continue
            pending.append(line)
            keyword, _, arguments = " ".join(pending).partition(" ")
            parsed.instructions.append(Instruction(keyword.upper(), arguments.strip(), start))
            pending = []
        return parsed

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def final_stage(self) -> list[Instruction]:
        """The instructions of the last stage: what the image that runs is made of."""
        froms = [n for n, i in enumerate(self.instructions) if i.keyword == "FROM"]
        return self.instructions[froms[-1] :]

    def exec_form(self, keyword: str) -> list[str]:
        """The last ``keyword`` (ENTRYPOINT, CMD) of the final stage, which must be JSON."""
        last = [i for i in self.final_stage() if i.keyword == keyword][-1]
        value = json.loads(last.arguments)
        assert isinstance(value, list), f"{self.path.name}:{last.line}: {keyword} not exec form"
        return [str(v) for v in value]

    def env(self) -> dict[str, str]:
        """ENV of the final stage (``KEY=VALUE`` pairs; ``$PATH``-style references expanded)."""
        found: dict[str, str] = {}
        for instruction in self.final_stage():
            if instruction.keyword != "ENV":
                continue
            for pair in shlex.split(instruction.arguments):
                key, _, value = pair.partition("=")
                found[key] = os.path.expandvars(value.replace("$PATH", os.environ["PATH"]))
        return found


def manifests(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def validate(obj: dict[str, Any]) -> None:
    """``obj`` against Kubernetes' OpenAPI schemas, strict: an unknown field is an error."""
    import kubernetes_validate

    for version in KUBERNETES_VERSIONS:
        kubernetes_validate.validate(obj, version, strict=True)


def validate_container(container: dict[str, Any]) -> None:
    """A container spec as core/v1 Container, inside the smallest Pod that holds it
    (the CRDs that embed containers are not in kubernetes-validate's schemas)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "container-check"},
        "spec": {"containers": [container]},
    }
    validate(pod)


def naiad_command(command: list[str]) -> list[str]:
    """A container's ``naiad ...`` command line for this checkout: the console script
    ``naiad`` is ``naiad.cli:main``, which ``python -m naiad`` runs with this interpreter."""
    assert command[0] == "naiad", command
    return [sys.executable, "-m", "naiad", *command[1:]]


#: Where the images put their scripts (ENTRYPOINT, ``tritonserver``): on PATH in both bases.
IMAGE_BIN = "/usr/local/bin/"


def image_bin(dockerfile: Dockerfile) -> Path:
    """The folder of this checkout that the final stage copies onto the image's
    /usr/local/bin: put on PATH, its scripts run here as in the image."""
    [copy] = [
        i
        for i in dockerfile.final_stage()
        if i.keyword == "COPY" and i.arguments.endswith(IMAGE_BIN)
    ]
    [source] = [word for word in copy.arguments.split()[:-1] if not word.startswith("--")]
    return ROOT / source


def image_env(dockerfile: Dockerfile, shims: Path) -> dict[str, str]:
    """This environment with the image's ENV, and a PATH on which the image's commands
    resolve: ``naiad`` (the console script, as :func:`naiad_command` runs it, from a
    shim written into ``shims``), then the scripts the image copies onto its PATH."""
    shims.mkdir(exist_ok=True)
    naiad = shims / "naiad"
    naiad.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m naiad "$@"\n')
    naiad.chmod(0o755)
    env = {**os.environ, **dockerfile.env()}
    env["PATH"] = os.pathsep.join([str(shims), str(image_bin(dockerfile)), env["PATH"]])
    return env


def command_line(pid: int) -> list[str]:
    """What process ``pid`` runs now (Linux /proc): after an ``exec`` chain, the last one."""
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


def with_flag(args: list[str], flag: str, value: str) -> list[str]:
    """``args`` with ``flag``'s value replaced (``--flag=value`` or ``--flag value``)."""
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg == flag:
            skip = True
            continue
        if arg.startswith(flag + "="):
            continue
        out.append(arg)
    return [*out, f"{flag}={value}"]


def mapped(args: list[str], mounts: dict[str, Path]) -> list[str]:
    """``args`` with each container path in ``mounts`` replaced by its local folder."""
    out = []
    for arg in args:
        for inside, outside in mounts.items():
            arg = arg.replace(inside, str(outside))
        out.append(arg)
    return out


def wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 120) -> None:
    """Until ``url`` answers 200; fails with the server's output if it exits first.
    Loading the example repository takes seconds; the deadline is for a busy machine."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"exited with {proc.returncode}:\n{log.read_text()}"
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=5).status_code == 200:
                return
        assert time.monotonic() < deadline, f"{url} did not answer:\n{log.read_text()}"
        time.sleep(0.2)


@contextlib.contextmanager
def running(
    command: list[str], env: dict[str, str], log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """``command`` as a process (its output in ``log``); SIGTERM and a wait after."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=log.parent
        )
    try:
        yield proc
    finally:
        stop(proc)


def add_sub_answers(http_port: int, grpc_port: int) -> None:
    """add_sub over REST (tritonclient.http) and gRPC (tritonclient.grpc), checked with numpy."""
    import numpy as np
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    a = np.array([1, 2, 3, 4], np.float32)
    b = np.array([10, 20, 30, 40], np.float32)
    for module, port in ((httpclient, http_port), (grpcclient, grpc_port)):
        client = module.InferenceServerClient(f"127.0.0.1:{port}")
        try:
            inputs = [
                module.InferInput("INPUT0", [4], "FP32"),
                module.InferInput("INPUT1", [4], "FP32"),
            ]
            inputs[0].set_data_from_numpy(a)
            inputs[1].set_data_from_numpy(b)
            result = client.infer("add_sub", inputs)
            np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
            np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)
        finally:
            client.close()
