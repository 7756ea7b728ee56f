"""The KServe ServingRuntime and InferenceServices in deploy/kserve/.

KServe's CRDs are not among kubernetes-validate's schemas, so each object is checked
in two parts: the fields KServe requires of it, by a small schema of our own written
from KServe's v1alpha1 ServingRuntime and v1beta1 InferenceService types (below), and
the parts that are core Kubernetes types (the runtime's container, the predictor's
resources and ports) against Kubernetes' own schemas.  Then the runtime's container
runs as KServe starts it, /mnt/models mapped onto examples/model_repository, and
answers the v2 protocol over REST and gRPC.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import yaml
from deploy_helpers import (
    DEPLOY,
    EXAMPLES,
    add_sub_answers,
    naiad_command,
    running,
    validate_container,
    wait_ready,
    with_flag,
)
from support.processes import free_port

from naiad.backends.registry import BUILTIN
from naiad.cli import build_parser

pytestmark = pytest.mark.e2e

KSERVE = DEPLOY / "kserve"
PROTOCOLS = ["v1", "v2", "grpc-v1", "grpc-v2"]

# Our own schema: what KServe's controller requires of a ServingRuntime.
SERVING_RUNTIME = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "serving.kserve.io/v1alpha1"},
        "kind": {"enum": ["ServingRuntime", "ClusterServingRuntime"]},
        "metadata": {"type": "object", "required": ["name"]},
        "spec": {
            "type": "object",
            "required": ["containers", "supportedModelFormats"],
            "properties": {
                "containers": {"type": "array", "minItems": 1},
                "protocolVersions": {"type": "array", "items": {"enum": PROTOCOLS}},
                "supportedModelFormats": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "additionalProperties": False,
                        "properties": {
                            "name": {"type": "string"},
                            "version": {"type": "string"},
                            "autoSelect": {"type": "boolean"},
                            "priority": {"type": "integer", "minimum": 1},
                        },
                    },
                },
                "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
    },
}

# Our own schema: what KServe requires of an InferenceService's predictor model.
INFERENCE_SERVICE = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "serving.kserve.io/v1beta1"},
        "kind": {"const": "InferenceService"},
        "metadata": {"type": "object", "required": ["name"]},
        "spec": {
            "type": "object",
            "required": ["predictor"],
            "properties": {
                "predictor": {
                    "type": "object",
                    "required": ["model"],
                    "properties": {
                        "model": {
                            "type": "object",
                            "required": ["modelFormat", "storageUri"],
                            "properties": {
                                "modelFormat": {
                                    "type": "object",
                                    "required": ["name"],
                                    "properties": {"name": {"type": "string"}},
                                },
                                "runtime": {"type": "string"},
                                "protocolVersion": {"enum": PROTOCOLS},
                                "storageUri": {
                                    "type": "string",
                                    "pattern": "^[a-z][a-z0-9+.-]*://",
                                },
                            },
                        }
                    },
                }
            },
        },
    },
}

#: KServe's model format names -> the naiad backend (Triton's name) that serves them.
FORMATS = {
    "onnx": "onnxruntime",
    "pytorch": "pytorch",
    "tensorflow": "tensorflow",
    "openvino": "openvino",
    "xgboost": "fil",
    "lightgbm": "fil",
    "sklearn": "fil",
    "tensorrt": "tensorrt",
}


def load(name: str) -> dict[str, Any]:
    return dict(yaml.safe_load((KSERVE / name).read_text()))


def runtime_container() -> dict[str, Any]:
    [container] = load("servingruntime.yaml")["spec"]["containers"]
    return dict(container)


def test_the_serving_runtime_has_what_kserve_requires():
    runtime = load("servingruntime.yaml")
    jsonschema.validate(runtime, SERVING_RUNTIME)
    assert runtime["spec"]["protocolVersions"] == ["v2", "grpc-v2"]
    container = runtime_container()
    validate_container(container)
    assert container["name"] == "kserve-container"  # the container KServe injects storage into
    annotations = runtime["spec"]["annotations"]
    assert annotations["prometheus.kserve.io/port"] == "8002"


def test_the_model_formats_are_the_ones_naiad_serves():
    formats = {f["name"] for f in load("servingruntime.yaml")["spec"]["supportedModelFormats"]}
    assert formats == {"triton", *FORMATS}
    assert set(FORMATS.values()) <= set(BUILTIN)


def test_the_runtime_serves_kserves_storage_mount():
    container = runtime_container()
    assert container["command"] == ["naiad", "serve"]
    args = build_parser().parse_args(["serve", *container["args"]])
    assert [str(r) for r in args.model_repository] == ["/mnt/models"]
    assert (args.http_port, args.grpc_port, args.metrics_port) == (8080, 9000, 8002)


@pytest.mark.parametrize("name", ["inferenceservice.yaml", "inferenceservice-grpc.yaml"])
def test_the_inference_services_use_the_runtime(name: str):
    service = load(name)
    jsonschema.validate(service, INFERENCE_SERVICE)
    model = service["spec"]["predictor"]["model"]
    runtime = load("servingruntime.yaml")
    assert model["runtime"] == runtime["metadata"]["name"]
    assert model["protocolVersion"] in runtime["spec"]["protocolVersions"]
    assert {"name": model["modelFormat"]["name"], "version": model["modelFormat"]["version"]} in [
        {"name": f["name"], "version": f["version"]}
        for f in runtime["spec"]["supportedModelFormats"]
    ]
    # The predictor's core fields, as the container they become.
    core = {k: model[k] for k in ("resources", "ports") if k in model}
    validate_container({"name": "kserve-container", **core})
    if model["protocolVersion"] == "grpc-v2":
        grpc = build_parser().parse_args(["serve", *runtime_container()["args"]]).grpc_port
        assert model["ports"] == [{"name": "h2c", "containerPort": grpc, "protocol": "TCP"}]


def test_the_runtime_container_answers_the_v2_protocol(tmp_path: Path):
    """The runtime's command and args as KServe starts them, after its storage
    initializer put the repository in /mnt/models; KServe's ports moved to free ones."""
    container = runtime_container()
    ports = {"--http-port": free_port(), "--grpc-port": free_port(), "--metrics-port": free_port()}
    args = [a.replace("/mnt/models", str(EXAMPLES)) for a in container["args"]]
    for flag, port in ports.items():
        args = with_flag(args, flag, str(port))
    env = {
        **os.environ,
        **{e["name"]: e["value"] for e in container["env"]},
        "TMPDIR": str(tmp_path),
    }
    http = f"http://127.0.0.1:{ports['--http-port']}"
    with running(naiad_command(container["command"]) + args, env, tmp_path / "serve.log") as proc:
        wait_ready(f"{http}/v2/health/ready", proc, tmp_path / "serve.log")
        # The Open Inference Protocol as a KServe v2 client speaks it: JSON over REST.
        body = {
            "inputs": [
                {"name": "INPUT0", "shape": [4], "datatype": "FP32", "data": [1, 2, 3, 4]},
                {"name": "INPUT1", "shape": [4], "datatype": "FP32", "data": [4, 3, 2, 1]},
            ]
        }
        answer = httpx.post(f"{http}/v2/models/add_sub/infer", json=body).json()
        outputs = {o["name"]: o["data"] for o in answer["outputs"]}
        assert outputs == {"OUTPUT0": [5, 5, 5, 5], "OUTPUT1": [-3, -1, 1, 3]}
        assert httpx.get(f"{http}/v2/models/add_sub/ready").status_code == 200
        assert httpx.get(f"{http}/v2").json()["name"] == "triton"
        wrong = httpx.post(f"{http}/v2/models/no_such_model/infer", json=body)
        assert wrong.status_code == 404 and "unknown model" in wrong.json()["error"]  # as Triton
        add_sub_answers(ports["--http-port"], ports["--grpc-port"])
