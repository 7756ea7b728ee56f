"""The dashboard's HTTP side: its files, its three JSON views, and the restrictions on them.

The pages themselves are driven in a real browser in ``test_dashboard_browser.py``.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from google.protobuf import json_format, text_format

from frontends.http.wire import error_of, request
from naiad.config.model_config_pb2 import ModelConfig

pytestmark = pytest.mark.protocol

X = np.arange(16, dtype=np.float32).reshape(1, 16)


@pytest.fixture
def conn(case_repo: Path, serve) -> Iterator[http.client.HTTPConnection]:  # type: ignore[no-untyped-def]
    server = serve(case_repo, http=True, grpc=True)
    c = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    yield c
    c.close()


def get_json(conn: http.client.HTTPConnection, path: str) -> dict:  # type: ignore[type-arg]
    status, headers, data = request(conn, "GET", path)
    assert status == 200, data
    assert headers["content-type"] == "application/json"
    return json.loads(data)  # type: ignore[no-any-return]


def test_the_pages_and_every_file_they_name_are_served(conn: http.client.HTTPConnection) -> None:
    status, headers, _ = request(conn, "GET", "/dashboard")
    assert (status, headers["location"]) == (301, "dashboard/")
    status, headers, page = request(conn, "GET", "/dashboard/")
    assert status == 200
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert "default-src 'self'" in headers["content-security-policy"]
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"
    # Everything the page loads, and everything those scripts import, comes from here.
    todo = re.findall(r'(?:src|href)="([^"#:]+)"', page.decode())
    assert any(name.endswith(".js") for name in todo) and any(n.endswith(".css") for n in todo)
    seen: set[str] = set()
    while todo:
        name = todo.pop().removeprefix("./")
        if name in seen:
            continue
        seen.add(name)
        status, headers, body = request(conn, "GET", "/dashboard/" + name)
        assert status == 200, name
        if name.endswith(".js"):
            assert headers["content-type"] == "text/javascript; charset=utf-8"
            base = name.rpartition("/")[0]
            for imported in re.findall(r'from\s+"(\.{1,2}/[^"]+)"', body.decode()):
                todo.append(_join(base, imported))
        elif name.endswith(".css"):
            assert headers["content-type"] == "text/css; charset=utf-8"
    assert len(seen) >= 3
    assert not any(("http://" in n or "https://" in n) for n in seen)


def _join(base: str, relative: str) -> str:
    parts = [p for p in base.split("/") if p]
    for step in relative.split("/"):
        if step == "..":
            parts.pop()
        elif step != ".":
            parts.append(step)
    return "/".join(parts)


def test_nothing_outside_the_files_is_served(conn: http.client.HTTPConnection) -> None:
    for path in (
        "/dashboard/../app.py",
        "/dashboard/%2e%2e/app.py",
        "/dashboard/__init__.py",
        "/dashboard/site.py",
        "/dashboard/static/index.html",
        "/dashboard/nope.js",
        "/dashboardx",
    ):
        status, _, data = request(conn, "GET", path)
        assert status == 404, path
        assert error_of(data) == "Not Found"
    status, _, data = request(conn, "POST", "/dashboard/api/live", b"{}")
    assert status == 405
    assert error_of(data) == "Method Not Allowed"


def test_server_view(case_repo: Path, serve) -> None:  # type: ignore[no-untyped-def]
    server = serve(case_repo, http=True, grpc=True, model_control_mode="explicit",
                   load_models=("*",))  # fmt: skip
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        first = get_json(conn, "/dashboard/api/server")
        v2 = get_json(conn, "/v2")
        assert first["name"] == v2["name"] == "triton"
        assert first["triton_version"] == v2["version"]
        assert first["extensions"] == v2["extensions"]
        from naiad import __version__

        assert first["version"] == __version__
        assert first["model_control_mode"] == "explicit"
        assert first["repositories"] == [str(case_repo)]
        assert first["endpoints"]["http"].endswith(f":{server.http_port}")
        assert first["endpoints"]["grpc"].endswith(f":{server.grpc_port}")
        assert "metrics" not in first["endpoints"]
        assert first["workers"] == 1
        assert first["restricted"] == {}
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", first["start_time"])
        time.sleep(0.05)
        assert get_json(conn, "/dashboard/api/server")["uptime_s"] > first["uptime_s"] >= 0
    finally:
        conn.close()


def test_live_view_counts_and_percentiles(case_repo: Path, serve) -> None:  # type: ignore[no-untyped-def]
    server = serve(case_repo, http=True)
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    try:

        def identity() -> dict:  # type: ignore[type-arg]
            doc = get_json(conn, "/dashboard/api/live")
            assert doc["time_ms"] > 0
            return next(m for m in doc["models"] if m["name"] == "identity_fp32")

        before = identity()
        # Percentiles start when the dashboard first asks: none yet.
        assert before["window_count"] == 0
        assert before["p50_us"] is None and before["p99_us"] is None
        assert before["pending"] == 0
        inp = httpclient.InferInput("INPUT0", [1, 16], "FP32")
        inp.set_data_from_numpy(X)
        for _ in range(20):
            client.infer("identity_fp32", [inp])
        with pytest.raises(Exception, match="unexpected shape"):
            bad = httpclient.InferInput("INPUT0", [1, 15], "FP32")
            bad.set_data_from_numpy(X[:, :15])
            client.infer("identity_fp32", [bad])
        after = identity()
        assert after["success"] - before["success"] == 20
        assert after["success"] == after["inference_count"]
        assert after["window_count"] == 20
        assert 0 < after["p50_us"] <= after["p99_us"]
        stats = client.get_inference_statistics("identity_fp32")["model_stats"][0]
        assert after["success_ns"] == int(stats["inference_stats"]["success"]["ns"])
        assert after["fail"] == int(stats["inference_stats"]["fail"]["count"])
    finally:
        client.close()
        conn.close()


def test_config_as_pbtxt(conn: http.client.HTTPConnection) -> None:
    status, headers, data = request(conn, "GET", "/dashboard/api/models/identity_fp32/config.pbtxt")
    assert status == 200
    assert headers["content-type"] == "text/plain; charset=utf-8"
    shown = text_format.Parse(data.decode(), ModelConfig())
    served = json_format.Parse(
        request(conn, "GET", "/v2/models/identity_fp32/config")[2], ModelConfig()
    )
    assert shown == served
    assert shown.name == "identity_fp32" and shown.max_batch_size == 8
    path = "/dashboard/api/models/identity_fp32/versions/1/config.pbtxt"
    assert request(conn, "GET", path)[2] == data
    # Errors are those of the v2 config endpoint, word for word.
    for name in ("nope", "identity_fp32/versions/9"):
        status, _, data = request(conn, "GET", f"/dashboard/api/models/{name}/config.pbtxt")
        v2 = request(conn, "GET", f"/v2/models/{name}/config")
        assert (status, error_of(data)) == (v2[0], error_of(v2[2]))
        assert status == 404


def test_restrictions_hold_on_the_dashboard(case_repo: Path, serve) -> None:  # type: ignore[no-untyped-def]
    server = serve(case_repo, http=True, http_restricted_api=(
        "statistics,model-config:admin-key=secret", "metadata:meta-key=m",
    ))  # fmt: skip
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        paths = {
            "/dashboard/api/live": "admin-key",
            "/dashboard/api/models/identity_fp32/config.pbtxt": "admin-key",
            "/dashboard/api/server": "meta-key",
        }
        for path, header in paths.items():
            status, _, data = request(conn, "GET", path)
            assert status == 403, path
            assert error_of(data) == f"This API is restricted, expecting header '{header}'"
            key = {"admin-key": "secret", "meta-key": "m"}[header]
            assert request(conn, "GET", path, headers={header: key})[0] == 200
        # The pages hold no server data: a browser gets them and then asks with the header.
        assert request(conn, "GET", "/dashboard/")[0] == 200
        doc = json.loads(
            request(conn, "GET", "/dashboard/api/server", headers={"meta-key": "m"})[2]
        )
        # the header each category needs, never its value
        assert doc["restricted"] == {
            "statistics": "admin-key",
            "model-config": "admin-key",
            "metadata": "meta-key",
        }
    finally:
        conn.close()


def test_host_details_need_the_model_repository_header(case_repo: Path, serve) -> None:  # type: ignore[no-untyped-def]
    """/v2 (``metadata``) tells nothing about the host: the server view, as open, shows
    where the repositories live and the pid only to whoever may manage the models."""
    server = serve(case_repo, http=True, http_restricted_api=("model-repository:admin-key=s",))
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        doc = get_json(conn, "/dashboard/api/server")
        assert doc["repositories"] is None and doc["pid"] is None
        assert str(case_repo) not in json.dumps(doc)
        assert doc["restricted"] == {"model-repository": "admin-key"}
        assert doc["model_control_mode"] == "none"  # the rest is there
        for wrong in ({"admin-key": "x"}, {"other": "s"}):
            status, _, data = request(conn, "GET", "/dashboard/api/server", headers=wrong)
            assert status == 200 and json.loads(data)["pid"] is None
        status, _, data = request(conn, "GET", "/dashboard/api/server", headers={"admin-key": "s"})
        doc = json.loads(data)
        assert doc["repositories"] == [str(case_repo)]
        assert doc["pid"] == os.getpid()  # the server runs in this process
    finally:
        conn.close()


def test_allow_dashboard_false(case_repo: Path, serve) -> None:  # type: ignore[no-untyped-def]
    server = serve(case_repo, http=True, allow_dashboard=False)
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        for path in ("/dashboard", "/dashboard/", "/dashboard/api/live", "/dashboard/api/server"):
            assert request(conn, "GET", path)[0] == 404, path
        assert request(conn, "GET", "/v2")[0] == 200
    finally:
        conn.close()
