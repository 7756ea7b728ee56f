"""``naiad serve`` runs the command lines written for ``tritonserver``, unmodified.

Three sets of arguments, as they are written where Triton is deployed:
every flag of Triton's documentation (``tritonserver --help`` of 2.51 and of
the newest release) in its usual spellings; the arguments of NVIDIA's Helm
charts (server repository, ``deploy/``); and the KServe Triton runtime
(kserve ``config/runtimes/kserve-tritonserver.yaml``).  Only the paths and
ports are the test's.  Each must serve a model to tritonclient, and log one
warning for each flag naiad accepts without effect, naming it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from support import onnx_models
from support.onnx_models import write_config
from support.processes import free_port
from support.served import started

from naiad.options.triton_flags import WITHOUT_EFFECT

pytestmark = pytest.mark.e2e

CONFIG = """
name: "simple"
backend: "onnxruntime"
max_batch_size: 8
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [4] }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [4] }]
instance_group [{ kind: KIND_CPU count: 1 }]
"""

#: Every flag of tritonserver --help (2.51 and 2.71), spelled as Triton's docs and
#: launch scripts spell them: --flag=value, --flag value, switches alone or =true/1.
DOCS = """
--model-repository={repo} --model-store {empty} --id=triton-docs --exit-timeout-secs 30
--log-verbose=1 --log-info=true --log-warning true --log-error=1 --log-format=ISO8601
--exit-on-error=false --disable-auto-complete-config --strict-model-config=true
--strict-readiness=true --model-control-mode=explicit --load-model=simple
--repository-poll-secs=5 --model-config-name=h100 --model-load-thread-count=2
--model-load-retry-count 1 --model-namespacing=true --enable-peer-access=false
--allow-http=true --http-address=127.0.0.1 --http-port={http} --reuse-http-port=true
--http-header-forward-pattern=x-forward-.* --http-thread-count=16
--http-restricted-api=model-repository:admin-key=admin-secret --http-max-input-size=67108864
--allow-grpc=true --grpc-address=127.0.0.1 --grpc-port {grpc} --reuse-grpc-port=false
--grpc-header-forward-pattern=x-forward-.* --grpc-infer-allocation-pool-size=16
--grpc-infer-thread-count=4 --grpc-max-response-pool-size=32 --grpc-use-ssl=false
--grpc-use-ssl-mutual=false --grpc-server-cert={certs}/server.pem
--grpc-server-key={certs}/server.key --grpc-root-cert={certs}/ca.pem
--grpc-infer-response-compression-level=low --grpc-keepalive-time=7200000
--grpc-keepalive-timeout=20000 --grpc-keepalive-permit-without-calls=1
--grpc-http2-max-pings-without-data=2 --grpc-http2-min-recv-ping-interval-without-data=300000
--grpc-http2-max-ping-strikes=2 --grpc-max-connection-age=600000
--grpc-max-connection-age-grace=5000
--grpc-restricted-protocol=model-repository:admin-key=admin-secret
--allow-sagemaker=true --sagemaker-port=8080 --sagemaker-safe-port-range=8081-8085
--sagemaker-thread-count=8 --allow-vertex-ai=true --vertex-ai-port=8080
--vertex-ai-thread-count=8 --vertex-ai-default-model=simple
--allow-metrics=true --allow-gpu-metrics=false --allow-cpu-metrics=true
--metrics-address=127.0.0.1 --metrics-port={metrics} --metrics-interval-ms=2000
--metrics-config=summary_latencies=true --trace-config=rate=100 --trace-config=level=OFF
--trace-file={tmp}/trace.json --trace-level=OFF --trace-rate=1000 --trace-count=-1
--trace-log-frequency=0 --backend-directory=/opt/tritonserver/backends
--backend-config=onnxruntime,enable-global-threadpool=0
--repoagent-directory=/opt/tritonserver/repoagents --cache-config=local,size=1048576
--cache-directory=/opt/tritonserver/caches --response-cache-byte-size=1048576
--rate-limit=off --rate-limit-resource=R1:10:0 --pinned-memory-pool-byte-size=268435456
--cuda-memory-pool-byte-size=0:67108864 --cuda-memory-pool-byte-size=1:67108864
--cuda-virtual-address-size=0:1073741824 --min-supported-compute-capability=6.0
--buffer-manager-thread-count=4 --host-policy=gpu0,numa-node=0
--host-policy=gpu0,cpu-cores=0-3 --model-load-gpu-limit=0:0.8 --allow-client-shm=true
"""

#: NVIDIA's Helm charts (server repository, deploy/): gke-marketplace-app, aws, oci,
#: k8s-onprem; the test adds the addresses and ports (a chart's pod has them alone).
HELM = {
    "gke-marketplace-app": "--model-store={repo} --strict-model-config=False "
    "--log-verbose=0 --allow-gpu-metrics=True",
    "aws": "--model-store={repo} --model-control-mode=poll --repository-poll-secs=5",
    "k8s-onprem": "--model-repository={repo}",
}

#: KServe's Triton runtime (config/runtimes/kserve-tritonserver.yaml), ports the test's.
KSERVE = "--model-store={repo} --grpc-port={grpc} --http-port={http} --allow-grpc=true " \
    "--allow-http=true"  # fmt: skip

#: What the test adds to a chart's or runtime's arguments: loopback, free ports.
LOOPBACK = "--http-address=127.0.0.1 --grpc-address=127.0.0.1 --metrics-address=127.0.0.1 " \
    "--http-port={http} --grpc-port={grpc} --metrics-port={metrics}"  # fmt: skip


@pytest.fixture
def places(tmp_path: Path) -> dict[str, str]:
    repo = tmp_path / "models"
    onnx_models.identity(repo / "simple" / "1" / "model.onnx", shape=("batch", 4))
    write_config(repo / "simple", CONFIG)
    (tmp_path / "empty").mkdir()
    certs = tmp_path / "certs"
    certs.mkdir()
    for name in ("server.pem", "server.key", "ca.pem"):  # never read: --grpc-use-ssl=false
        (certs / name).write_text("")
    ports = {name: str(free_port()) for name in ("http", "grpc", "metrics")}
    return {"repo": str(repo), "empty": str(tmp_path / "empty"), "certs": str(certs),
            "tmp": str(tmp_path), **ports}  # fmt: skip


def _infers(places: dict[str, str]) -> None:
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    for client, module in (
        (httpclient.InferenceServerClient(f"127.0.0.1:{places['http']}"), httpclient),
        (grpcclient.InferenceServerClient(f"127.0.0.1:{places['grpc']}"), grpcclient),
    ):
        tensor = module.InferInput("INPUT0", [2, 4], "FP32")
        tensor.set_data_from_numpy(x)
        result = client.infer("simple", [tensor])
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)
        client.close()


def _warnings(log: Path) -> dict[str, int]:
    """How many times each flag without effect is named in a warning of the log."""
    text = log.read_text()
    return {
        spec.flag: text.count(f"{spec.flag} has no effect in naiad: {spec.why}")
        for spec in WITHOUT_EFFECT
    }


def test_every_flag_of_tritons_documentation(places: dict[str, str], tmp_path: Path) -> None:
    args = DOCS.format(**places).split()
    log = tmp_path / "naiad.log"
    with started(args, log):  # until it says it serves
        _infers(places)
        warned = _warnings(log)
    assert warned == {spec.flag: 1 for spec in WITHOUT_EFFECT}, log.read_text()
    assert "--model-namespacing has no effect" not in log.read_text()


@pytest.mark.parametrize("chart", list(HELM))
def test_nvidias_helm_charts(chart: str, places: dict[str, str], tmp_path: Path) -> None:
    args = f"{HELM[chart]} {LOOPBACK}".format(**places).split()
    log = tmp_path / "naiad.log"
    with started(args, log):  # until it says it serves
        _infers(places)
    assert set(_warnings(log).values()) == {0}, log.read_text()


def test_the_kserve_triton_runtime(places: dict[str, str], tmp_path: Path) -> None:
    args = f"{KSERVE} {LOOPBACK}".format(**places).split()
    log = tmp_path / "naiad.log"
    with started(args, log):  # until it says it serves
        _infers(places)
    assert set(_warnings(log).values()) == {0}, log.read_text()
