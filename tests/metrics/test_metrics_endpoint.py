"""The metrics port: Triton's paths, methods and content types; tritonclient traffic."""

from __future__ import annotations

import http.client
import importlib

import numpy as np
import pytest
from metrics.helpers import add_simple, samples, scrape

pytestmark = pytest.mark.protocol

LABELS = 'model="simple",version="1"'


@pytest.fixture
def server(repo, serve):
    add_simple(repo)
    return serve(repo, metrics_port=0)


def _request(server, method: str, path: str) -> tuple[int, str, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.metrics_port, timeout=30)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type") or "", resp.read()
    finally:
        conn.close()


def test_metrics_paths(server):
    for path in ("/metrics", "/metrics/"):
        status, content_type, body = _request(server, "GET", path)
        assert status == 200
        assert content_type == "text/plain; charset=utf-8"
        assert b"# TYPE nv_inference_count counter" in body
    status, _, body = _request(server, "GET", "/v2/health/ready")
    assert (status, body) == (200, b"")


def test_other_methods_are_not_allowed(server):
    status, content_type, body = _request(server, "POST", "/metrics")
    assert status == 405
    assert content_type == "application/json"
    assert body == b'{"error":"Method Not Allowed"}'


def test_keep_alive_serves_several_scrapes_on_one_connection(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.metrics_port, timeout=30)
    try:
        for _ in range(3):
            conn.request("GET", "/metrics")
            resp = conn.getresponse()
            assert resp.status == 200
            assert resp.read()
    finally:
        conn.close()


def test_the_port_is_free_to_choose_and_disabled_with_minus_one(repo, serve):
    add_simple(repo)
    assert serve(repo).metrics_port is None
    assert serve(repo, metrics_port=0).metrics_port > 0


def _has_frontend(name: str) -> bool:
    try:
        module = importlib.import_module(f"naiad.frontends.{name}")
    except ImportError:
        return False
    return hasattr(module, "start")


@pytest.mark.skipif(not _has_frontend("http"), reason="HTTP frontend not available")
def test_tritonclient_http_traffic_moves_the_counters(repo, serve):
    import tritonclient.http as httpclient

    add_simple(repo)
    server = serve(repo, http=True, metrics_port=0)
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    try:
        inputs = []
        for name in ("INPUT0", "INPUT1"):
            tensor = httpclient.InferInput(name, [4, 16], "FP32")
            tensor.set_data_from_numpy(np.ones((4, 16), np.float32))
            inputs.append(tensor)
        for _ in range(2):
            client.infer("simple", inputs)
        with pytest.raises(Exception):  # noqa: B017 - unknown model: not counted
            client.infer("missing", inputs)
    finally:
        client.close()
    values = samples(scrape(server))
    assert values[f"nv_inference_request_success{{{LABELS}}}"] == 2
    assert values[f"nv_inference_count{{{LABELS}}}"] == 8
    assert values[f"nv_inference_exec_count{{{LABELS}}}"] == 2


@pytest.mark.skipif(not _has_frontend("grpc"), reason="gRPC frontend not available")
def test_tritonclient_grpc_traffic_moves_the_counters(repo, serve):
    import tritonclient.grpc as grpcclient

    add_simple(repo)
    server = serve(repo, grpc=True, metrics_port=0)
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    try:
        inputs = []
        for name in ("INPUT0", "INPUT1"):
            tensor = grpcclient.InferInput(name, [2, 16], "FP32")
            tensor.set_data_from_numpy(np.ones((2, 16), np.float32))
            inputs.append(tensor)
        for _ in range(3):
            client.infer("simple", inputs)
    finally:
        client.close()
    values = samples(scrape(server))
    assert values[f"nv_inference_request_success{{{LABELS}}}"] == 3
    assert values[f"nv_inference_count{{{LABELS}}}"] == 6
