"""The Helm chart deploy/helm/naiad and its plain renders under deploy/kubernetes/.

Every rendered object is validated against Kubernetes' schemas (kubernetes-validate,
strict); the ServiceMonitor, a CRD those schemas lack, against the few fields of our
own stated below.  Where Helm's Go SDK is importable (``helm_python``, from
``pip install helm-python-sdk``) the chart is linted and rendered here and must give
the committed files; without it, the committed files must carry the fingerprint of
the chart as it is now (scripts/render_deploy.py renders and fingerprints them).
Last, the pod the Deployment describes is run: the image's entrypoint with the
rendered args and env, the claim mapped onto examples/model_repository, and its
probes asked over HTTP.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
import yaml
from deploy_helpers import (
    CHART,
    DEPLOY,
    EXAMPLES,
    ROOT,
    Dockerfile,
    add_sub_answers,
    image_env,
    manifests,
    mapped,
    running,
    validate,
    wait_ready,
    with_flag,
)
from support.processes import free_port

from naiad.cli import build_parser

pytestmark = pytest.mark.e2e

PLAIN = DEPLOY / "kubernetes"
RENDERS = ["naiad.yaml", "naiad-full.yaml"]


def _load_renderer() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "render_deploy", ROOT / "scripts" / "render_deploy.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


render_deploy = _load_renderer()


def objects(name: str) -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in manifests(PLAIN / name)}


@pytest.fixture(scope="module")
def helm() -> ModuleType:
    return pytest.importorskip("helm_python", reason="Helm's SDK: pip install helm-python-sdk")


# The parts of a monitoring.coreos.com/v1 ServiceMonitor the chart writes, and what the
# Prometheus Operator requires of them (our own schema, not the operator's CRD).
SERVICE_MONITOR = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "spec": {
            "type": "object",
            "required": ["selector", "endpoints"],
            "properties": {
                "selector": {"type": "object", "required": ["matchLabels"]},
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["port"],
                        "additionalProperties": False,
                        "properties": {
                            "port": {"type": "string"},
                            "path": {"type": "string", "pattern": "^/"},
                            "interval": {"type": "string", "pattern": "^[0-9]+(ms|s|m|h)$"},
                            "scrapeTimeout": {"type": "string", "pattern": "^[0-9]+(ms|s|m|h)$"},
                        },
                    },
                },
            },
        },
    },
}


@pytest.mark.parametrize("name", RENDERS)
def test_every_object_validates_against_kubernetes_schemas(name: str):
    import jsonschema

    kinds = []
    for obj in manifests(PLAIN / name):
        kinds.append(obj["kind"])
        if obj["kind"] == "ServiceMonitor":
            jsonschema.validate(obj, SERVICE_MONITOR)
        else:
            validate(obj)
    assert {"ServiceAccount", "Service", "Deployment"} <= set(kinds)


def test_the_full_render_has_every_optional_part():
    assert set(objects("naiad-full.yaml")) == {
        "ServiceAccount", "Service", "Deployment", "PodDisruptionBudget",
        "HorizontalPodAutoscaler", "ServiceMonitor",
    }  # fmt: skip
    hpa = objects("naiad-full.yaml")["HorizontalPodAutoscaler"]["spec"]
    assert [m["type"] for m in hpa["metrics"]] == ["Resource", "Pods"]
    assert hpa["metrics"][1]["pods"]["metric"]["name"] == "avg_time_queue_us"
    pod = objects("naiad-full.yaml")["Deployment"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert "--workers=auto" in pod["containers"][0]["args"]


@pytest.mark.parametrize("name", RENDERS)
def test_the_committed_renders_come_from_the_chart_as_it_is(name: str):
    first = (PLAIN / name).read_text().splitlines()[0]
    assert first == render_deploy.FINGERPRINT + render_deploy.chart_fingerprint(), (
        f"deploy/helm/naiad changed since {name} was rendered: run python scripts/render_deploy.py"
    )


@pytest.mark.parametrize("name", RENDERS)
def test_the_pieces_fit_together(name: str):
    """What no schema checks: names, labels and ports that must agree across objects."""
    found = objects(name)
    deployment, service = found["Deployment"], found["Service"]
    pod = deployment["spec"]["template"]
    [container] = pod["spec"]["containers"]
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= pod["metadata"]["labels"].items()
    assert service["spec"]["selector"] == selector
    named = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert named == {"http": 8000, "grpc": 8001, "metrics": 8002}
    assert {p["targetPort"] for p in service["spec"]["ports"]} == set(named)
    assert pod["spec"]["serviceAccountName"] == found["ServiceAccount"]["metadata"]["name"]
    probes = {
        k: container[k]["httpGet"] for k in ("startupProbe", "livenessProbe", "readinessProbe")
    }
    assert probes == {
        "startupProbe": {"path": "/v2/health/ready", "port": "http"},
        "livenessProbe": {"path": "/v2/health/live", "port": "http"},
        "readinessProbe": {"path": "/v2/health/ready", "port": "http"},
    }
    for kind in ("HorizontalPodAutoscaler",):
        if kind in found:
            assert found[kind]["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    if "ServiceMonitor" in found:
        assert found["ServiceMonitor"]["spec"]["endpoints"][0]["port"] == "metrics"
    # The user the pod asks for is the image's USER.
    image_user = [i for i in Dockerfile.read(ROOT / "Dockerfile").all("USER")][-1].arguments
    assert pod["spec"]["securityContext"]["runAsUser"] == int(image_user.split(":")[0])


@pytest.mark.parametrize("name", RENDERS)
def test_the_container_args_are_naiad_serve_flags(name: str):
    """The rendered args parse as `naiad serve` flags, `--workers` included."""
    [container] = objects(name)["Deployment"]["spec"]["template"]["spec"]["containers"]
    _, unknown = build_parser().parse_known_args(["serve", *container["args"]])
    assert unknown == []


def test_the_chart_lints_and_renders_the_committed_files(helm: ModuleType):
    for values_file in render_deploy.RENDERS.values():
        values = render_deploy.values_of(values_file)
        for kube in ("v1.25.0", "v1.37.0"):
            report = helm.lint(str(CHART), values, strict=True, kube_version=kube)
            problems = [m for m in report["messages"] if m["severity"] >= 2]
            assert not problems and not report["errors"], report
    for name, values_file in render_deploy.RENDERS.items():
        assert render_deploy.manifest(values_file) == (PLAIN / name).read_text(), name


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({}, "set modelRepository.url (s3://, gs://, as://) or modelRepository.existingClaim"),
        ({"modelRepository": {"url": "s3://b/m", "existingClaim": "c"}}, "not both"),
        ({"modelRepository": {"url": "s3://b/m"}, "workers": "four"}, "/workers"),
        ({"modelRepository": {"url": "/models"}}, "/modelRepository/url"),
        (
            {"modelRepository": {"url": "s3://b/m"}, "autoscaling": {"enabled": True,
             "targetCPUUtilizationPercentage": None}},
            "autoscaling needs targetCPUUtilizationPercentage or queueTime.enabled",
        ),
    ],
)  # fmt: skip
def test_bad_values_are_refused_with_what_to_set(helm: ModuleType, values: dict, message: str):
    with pytest.raises(helm.HelmError) as info:
        render_deploy.render(values)
    assert message in str(info.value)


def test_workers_is_passed_only_when_set(helm: ModuleType):
    def args(**values: Any) -> list[str]:
        rendered = render_deploy.render({"modelRepository": {"existingClaim": "c"}, **values})
        deployment = yaml.safe_load(rendered["naiad/templates/deployment.yaml"])
        return deployment["spec"]["template"]["spec"]["containers"][0]["args"]

    assert not any(a.startswith("--workers") for a in args())
    assert "--workers=4" in args(workers=4)
    assert "--workers=auto" in args(workers="auto")


def test_the_pod_serves_and_answers_its_probes(tmp_path: Path):
    """The Deployment of deploy/kubernetes/naiad.yaml as the kubelet would start it:
    the image's ENTRYPOINT with the container's args and env, the claim's mount mapped
    onto examples/model_repository, ports moved to free ones; then every probe path."""
    [container] = objects("naiad.yaml")["Deployment"]["spec"]["template"]["spec"]["containers"]
    [mount] = [m for m in container["volumeMounts"] if m["name"] == "models"]
    ports = {"--http-port": free_port(), "--grpc-port": free_port(), "--metrics-port": free_port()}
    args = mapped(container["args"], {mount["mountPath"]: EXAMPLES})
    for flag, port in ports.items():
        args = with_flag(args, flag, str(port))
    dockerfile = Dockerfile.read(ROOT / "Dockerfile")
    entrypoint = dockerfile.exec_form("ENTRYPOINT")
    env = image_env(dockerfile, tmp_path / "shims")
    env.update({e["name"]: e["value"] for e in container["env"]})
    env["TMPDIR"] = str(tmp_path)  # the pod's emptyDir at /tmp
    http = ports["--http-port"]
    with running(entrypoint + args, env, tmp_path / "serve.log") as proc:
        wait_ready(f"http://127.0.0.1:{http}{container['startupProbe']['httpGet']['path']}", proc,
                   tmp_path / "serve.log")  # fmt: skip
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            path = container[probe]["httpGet"]["path"]
            assert httpx.get(f"http://127.0.0.1:{http}{path}").status_code == 200, probe
        add_sub_answers(http, ports["--grpc-port"])
        metrics = httpx.get(f"http://127.0.0.1:{ports['--metrics-port']}/metrics").text
        assert "nv_inference_queue_duration_us" in metrics  # what the queue-time HPA reads
