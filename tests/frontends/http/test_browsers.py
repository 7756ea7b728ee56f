"""What the HTTP port refuses from web browsers: cross-origin commands, bodies a page may
send without a preflight, and Host names a DNS-rebinding page uses on a loopback server.

Browsers are played by raw requests with the headers they send (Origin, Sec-Fetch-Site);
clients that send neither (tritonclient, curl) must see no change.
"""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import httpx
import numpy as np
import pytest
import tritonclient.http as httpclient

import naiad.asgi
from frontends.http.wire import error_of, infer_body, request

pytestmark = pytest.mark.protocol

LOAD = "/v2/repository/models/identity_fp32/load"
UNLOAD = "/v2/repository/models/identity_fp32/unload"
INDEX = "/v2/repository/index"
JSON_TYPE = {"Content-Type": "application/json"}


@pytest.fixture
def explicit(case_repo: Path, serve):  # type: ignore[no-untyped-def]
    """A loopback server in explicit mode with nothing loaded, and a connection to it."""
    server = serve(case_repo, http=True, model_control_mode="explicit")
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    yield server, conn
    conn.close()


def _own(port: int) -> dict[str, str]:
    return {"Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin"}


def _loaded(conn: http.client.HTTPConnection) -> bool:
    return request(conn, "GET", "/v2/models/identity_fp32/ready")[0] == 200


def test_a_cross_origin_page_cannot_load_or_unload(explicit) -> None:  # type: ignore[no-untyped-def]
    server, conn = explicit
    evil = {"Origin": "http://evil.example", "Content-Type": "text/plain"}
    status, headers, data = request(conn, "POST", LOAD, b"{}", evil)
    assert status == 403
    assert headers["content-type"] == "application/json"
    assert error_of(data) == (
        "Cross-origin request refused: Origin 'http://evil.example' is not this server "
        f"(Host '127.0.0.1:{server.http_port}'). Allow it with --http-cors-allow-origins"
    )
    assert not _loaded(conn)
    # JSON does not help a foreign page, nor does a port of the same host, nor "null".
    for origin in ("http://evil.example", "http://127.0.0.1:1", "null", "file://"):
        status, _, _ = request(conn, "POST", LOAD, b"{}", {"Origin": origin, **JSON_TYPE})
        assert status == 403, origin
    assert not _loaded(conn)
    # No Origin but a browser's Sec-Fetch-Site naming another site.
    for site in ("cross-site", "same-site"):
        headers = {"Sec-Fetch-Site": site, **JSON_TYPE}
        status, _, data = request(conn, "POST", LOAD, b"{}", headers)
        assert status == 403
        assert error_of(data).startswith(f"Cross-site request refused (Sec-Fetch-Site: {site})")
    assert not _loaded(conn)
    # Every other command too: unload, shared memory, trace and log settings, inference.
    assert request(conn, "POST", LOAD, b"{}")[0] == 200  # a plain client (no Origin)
    for path in (UNLOAD, "/v2/systemsharedmemory/region/r/register", "/v2/trace/setting",
                 "/v2/logging", "/v2/models/identity_fp32/infer",
                 "/v2/models/identity_fp32/generate"):  # fmt: skip
        status, _, data = request(conn, "POST", path, b"{}", evil)
        assert status == 403, path
        assert error_of(data).startswith("Cross-origin request refused"), path
    assert _loaded(conn)
    # Reads are not refused: without CORS headers the page cannot see the answer.
    status, headers, _ = request(
        conn, "GET", "/v2/models/stats", None, {"Origin": "http://evil.example"}
    )
    assert status == 200
    assert not any(name.startswith("access-control-") for name in headers)


def test_the_servers_own_pages_may_send_json_but_not_simple_bodies(explicit) -> None:  # type: ignore[no-untyped-def]
    server, conn = explicit
    own = _own(server.http_port)
    for kind in ("text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded",
                 "multipart/form-data; boundary=x", None):  # fmt: skip
        headers = dict(own) if kind is None else {**own, "Content-Type": kind}
        status, _, data = request(conn, "POST", LOAD, b"{}", headers)
        assert status == 415, kind
        shown = "" if kind is None else kind.partition(";")[0]
        assert error_of(data) == (
            f"Content-Type '{shown}' is refused from a browser: send application/json "
            "(or application/octet-stream for binary tensors)"
        )
    assert not _loaded(conn)
    assert request(conn, "POST", LOAD, b"{}", {**own, **JSON_TYPE})[0] == 200
    assert _loaded(conn)
    # Binary tensors as a page would send them (octet-stream needs a preflight cross-origin).
    x = np.arange(16, dtype=np.float32).reshape(1, 16)
    body, extra = infer_body([("INPUT0", "FP32", [1, 16], x)])
    headers = {**own, **extra, "Content-Type": "application/octet-stream"}
    status, _, data = request(conn, "POST", "/v2/models/identity_fp32/infer", body, headers)
    assert status == 200, data
    # Sec-Fetch-Site alone (a same-origin fetch) and localhost as the name both work.
    headers = {"Sec-Fetch-Site": "same-origin", "Host": f"localhost:{server.http_port}",
               **JSON_TYPE}  # fmt: skip
    assert request(conn, "POST", UNLOAD, b"{}", headers)[0] == 200
    assert not _loaded(conn)


def test_clients_without_browser_headers_are_unchanged(explicit) -> None:  # type: ignore[no-untyped-def]
    """tritonclient, perf_analyzer and curl send no Origin: any type, any Host, as Triton."""
    server, conn = explicit
    for kind in ("text/plain", "application/x-www-form-urlencoded", None):
        headers = {"Host": "proxy.example"} if kind is None else {"Content-Type": kind}
        assert request(conn, "POST", INDEX, b"{}", headers)[0] == 200, kind
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    try:
        client.load_model("identity_fp32")
        inp = httpclient.InferInput("INPUT0", [1, 16], "FP32")
        inp.set_data_from_numpy(np.ones((1, 16), np.float32))
        result = client.infer("identity_fp32", [inp])
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), np.ones((1, 16)))
        client.unload_model("identity_fp32")
    finally:
        client.close()


def test_a_rebound_name_cannot_reach_a_loopback_server(explicit) -> None:  # type: ignore[no-untyped-def]
    """DNS rebinding: the page's own name now points at 127.0.0.1, so its requests are
    "same-origin" (Origin and Host agree); the name is what gives it away."""
    server, conn = explicit
    port = server.http_port
    rebound = {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}
    status, _, data = request(conn, "POST", LOAD, b"{}", {**rebound, **JSON_TYPE})
    assert status == 403
    assert error_of(data) == (
        f"Request refused: Host 'evil.example:{port}' is not a name of this server, which "
        "listens on a loopback address only (a guard against DNS rebinding). Use localhost "
        "or an IP address, or allow the name with --http-cors-allow-origins"
    )
    assert not _loaded(conn)
    # Reads too: a rebound page could read them.
    same = {"Host": f"evil.example:{port}", "Sec-Fetch-Site": "same-origin"}
    assert request(conn, "GET", "/v2", None, same)[0] == 403
    # Names a rebinding page cannot use: localhost, *.localhost, IP addresses.
    for host in ("localhost", "app.localhost", "127.0.0.1", "[::1]"):
        headers = {"Host": f"{host}:{port}", "Origin": f"http://{host}:{port}", **JSON_TYPE}
        assert request(conn, "POST", INDEX, b"{}", headers)[0] == 200, host


def test_allowed_origins(case_repo: Path, serve) -> None:  # type: ignore[no-untyped-def]
    server = serve(case_repo, http=True, model_control_mode="explicit",
                   http_cors_allow_origins=("https://ui.example, http://tools.example:8080",))  # fmt: skip
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        for origin in ("https://ui.example", "https://UI.example:443", "http://tools.example:8080"):
            headers = {"Origin": origin, **JSON_TYPE}
            assert request(conn, "POST", INDEX, b"{}", headers)[0] == 200, origin
        for origin in ("http://ui.example", "http://tools.example", "https://evil.example"):
            headers = {"Origin": origin, **JSON_TYPE}
            assert request(conn, "POST", INDEX, b"{}", headers)[0] == 403, origin
        # An allowed origin still sends JSON, and its host is a name this server answers to
        # (a proxy in front of a loopback server).
        headers = {"Origin": "https://ui.example", "Content-Type": "text/plain"}
        assert request(conn, "POST", INDEX, b"{}", headers)[0] == 415
        headers = {"Host": "ui.example", "Origin": "https://ui.example", **JSON_TYPE}
        assert request(conn, "POST", INDEX, b"{}", headers)[0] == 200
        # A proxy that rewrites Host says the public one in X-Forwarded-Host.
        headers = {"Origin": "https://public.example", "X-Forwarded-Host": "public.example",
                   **JSON_TYPE}  # fmt: skip
        assert request(conn, "POST", INDEX, b"{}", headers)[0] == 200
    finally:
        conn.close()


def test_any_host_on_a_public_address(case_repo: Path, serve) -> None:  # type: ignore[no-untyped-def]
    """On 0.0.0.0 the server cannot know its names (proxies, DNS): Host is not checked,
    Origin still is."""
    server = serve(case_repo, http=True, address="0.0.0.0")
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        headers = {"Host": "naiad.internal", "Origin": "http://naiad.internal", **JSON_TYPE}
        assert request(conn, "POST", INDEX, b"{}", headers)[0] == 200
        headers = {"Host": "naiad.internal", "Origin": "http://evil.example", **JSON_TYPE}
        assert request(conn, "POST", INDEX, b"{}", headers)[0] == 403
    finally:
        conn.close()


def test_an_invalid_allowed_origin_stops_the_start(case_repo: Path, serve) -> None:  # type: ignore[no-untyped-def]
    for bad in ("ui.example", "https://ui.example/path", "ftp://ui.example"):
        with pytest.raises(ValueError, match="invalid --http-cors-allow-origins value"):
            serve(case_repo, http=True, http_cors_allow_origins=(bad,))


async def test_the_same_rules_under_asgi(case_repo: Path) -> None:
    app = naiad.asgi.create_app(
        case_repo, model_control_mode="explicit", http_cors_allow_origins=("https://ui.example",)
    )
    # httpx reports the URL's host and port as the ASGI scope's server: a loopback one here
    transport = httpx.ASGITransport(app=app)
    async with (
        app.lifespan(),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client,
    ):
        evil = {"Origin": "http://evil.example", "Content-Type": "text/plain"}
        answer = await client.post(LOAD, content=b"{}", headers=evil)
        assert answer.status_code == 403
        assert answer.json()["error"].startswith("Cross-origin request refused")
        own = {"Origin": "http://127.0.0.1:8000", "Content-Type": "text/plain"}
        assert (await client.post(LOAD, content=b"{}", headers=own)).status_code == 415
        rebound = {"Host": "evil.example:8000", "Origin": "http://evil.example:8000"}
        answer = await client.post(LOAD, json={}, headers=rebound)
        assert answer.status_code == 403
        assert "DNS rebinding" in answer.json()["error"]
        assert (await client.get("/v2/models/identity_fp32/ready")).status_code == 400
        own["Content-Type"] = "application/json"
        assert (await client.post(LOAD, content=b"{}", headers=own)).status_code == 200
        assert (await client.post(UNLOAD, content=b"{}")).status_code == 200  # no Origin
        assert json.loads((await client.post(INDEX, content=b"{}")).content)
        # an allowed origin: a preflight, and CORS headers on a streamed answer too
        ui = {"Origin": "https://ui.example", "Access-Control-Request-Method": "POST"}
        answer = await client.options(LOAD, headers=ui)
        assert answer.status_code == 200
        assert answer.headers["access-control-allow-origin"] == "https://ui.example"
        path = "/v2/models/identity_fp32/generate_stream"
        ui = {"Origin": "https://ui.example"}
        assert (await client.post(LOAD, content=b"{}")).status_code == 200
        answer = await client.post(path, json={"INPUT0": list(range(16))}, headers=ui)
        assert answer.status_code == 200 and answer.text.startswith("data: {")
        assert answer.headers["access-control-allow-origin"] == "https://ui.example"


def test_preflight_and_cors_headers_for_allowed_origins(case_repo: Path, serve) -> None:  # type: ignore[no-untyped-def]
    server = serve(case_repo, http=True, model_control_mode="explicit",
                   http_cors_allow_origins=("https://ui.example",))  # fmt: skip
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    asks = {
        "Origin": "https://ui.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type,admin-key",
    }
    try:
        status, headers, data = request(conn, "OPTIONS", LOAD, None, asks)
        assert (status, data) == (200, b"")
        assert headers["access-control-allow-origin"] == "https://ui.example"
        assert headers["access-control-allow-methods"] == "GET, POST"
        assert headers["access-control-allow-headers"] == "content-type,admin-key"
        assert headers["access-control-max-age"] == "600"
        assert headers["vary"] == "Origin"
        # Any other OPTIONS is Triton's 405, which grants nothing.
        for other in ({**asks, "Origin": "https://evil.example"}, {}):
            status, headers, data = request(conn, "OPTIONS", LOAD, None, other)
            assert (status, error_of(data)) == (405, "Method Not Allowed")
            assert "access-control-allow-origin" not in headers
        not_preflight = {"Origin": "https://ui.example"}
        assert request(conn, "OPTIONS", LOAD, None, not_preflight)[0] == 405
        # The answers to the allowed page carry the headers, errors and binary ones too.
        ui = {"Origin": "https://ui.example", **JSON_TYPE}
        status, headers, _ = request(conn, "POST", LOAD, b"{}", ui)
        assert status == 200
        assert headers["access-control-allow-origin"] == "https://ui.example"
        nope = "/v2/repository/models/nope/load"
        status, headers, data = request(conn, "POST", nope, b"{}", ui)
        assert (status, data) == request(conn, "POST", nope, b"{}")[::2]  # the plain answer
        assert status == 500 and headers["access-control-allow-origin"] == "https://ui.example"
        x = np.arange(16, dtype=np.float32).reshape(1, 16)
        body, extra = infer_body([("INPUT0", "FP32", [1, 16], x)], binary=True)
        binary = {**ui, **extra, "Content-Type": "application/octet-stream"}
        path = "/v2/models/identity_fp32/infer"
        status, headers, _ = request(conn, "POST", path, body, binary)
        assert status == 200
        assert headers["access-control-expose-headers"] == "Inference-Header-Content-Length"
        assert headers["access-control-allow-origin"] == "https://ui.example"
        # A stream's head carries them too.
        path = "/v2/models/identity_fp32/generate_stream"
        body = json.dumps({"INPUT0": list(range(16))}).encode()
        status, headers, data = request(conn, "POST", path, body, ui)
        assert status == 200 and data.startswith(b"data: {")
        assert headers["content-type"] == "text/event-stream; charset=utf-8"
        assert headers["access-control-allow-origin"] == "https://ui.example"
        # Nothing for the server's own pages, other origins or plain clients.
        own = {"Origin": f"http://127.0.0.1:{server.http_port}", **JSON_TYPE}
        for headers_sent in (own, {}):
            _, headers, _ = request(conn, "POST", INDEX, b"{}", headers_sent)
            assert "access-control-allow-origin" not in headers
    finally:
        conn.close()


def test_any_origin(case_repo: Path, serve) -> None:  # type: ignore[no-untyped-def]
    """``*``: every origin and Host name, still JSON only; CORS answers name the origin."""
    server = serve(case_repo, http=True, http_cors_allow_origins=("*",))
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        port = server.http_port
        for sent in (
            {"Origin": "https://evil.example"},
            {"Origin": f"http://rebound.example:{port}", "Host": f"rebound.example:{port}"},
            {"Sec-Fetch-Site": "cross-site"},
        ):
            status, headers, _ = request(conn, "POST", INDEX, b"{}", {**sent, **JSON_TYPE})
            assert status == 200, sent
            expected = sent.get("Origin")
            assert headers.get("access-control-allow-origin") == expected
        headers = {"Origin": "https://evil.example", "Content-Type": "text/plain"}
        assert request(conn, "POST", INDEX, b"{}", headers)[0] == 415
    finally:
        conn.close()
