"""Pins HTTP's answers to odd version strings on infer and ready.

The version text is parsed in the codec; these answers (status and body)
must not move when that parsing changes hands.
"""

from __future__ import annotations

import http.client
import json
from urllib.parse import quote

import pytest

pytestmark = pytest.mark.protocol

BODY = json.dumps(
    {
        "inputs": [
            {"name": "INPUT0", "datatype": "FP32", "shape": [1, 16], "data": [0.0] * 16},
        ]
    }
)


def _ask(http_url: str, method: str, path: str, body: str | None = None) -> tuple[int, object]:
    host, port = http_url.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request(method, path, body=body)
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read() or b"null")
    finally:
        conn.close()


HUGE = "99999999999999999999999"
NOT_FOUND = {"error": "Not Found"}


@pytest.mark.parametrize(
    ("version", "infer", "ready"),
    [
        # Only digits reach the codec; "01" is version 1.
        ("01", 200, (200, None)),
        ("-1", (404, NOT_FOUND), (404, NOT_FOUND)),
        ("abc", (404, NOT_FOUND), (404, NOT_FOUND)),
        ("1.5", (404, NOT_FOUND), (404, NOT_FOUND)),
        (" 1", (404, NOT_FOUND), (404, NOT_FOUND)),
        (
            HUGE,
            (
                404,
                {
                    "error": f"Request for unknown model: 'identity_fp32' version {HUGE} is not found"
                },
            ),
            (400, {"error": "Model version not ready"}),
        ),
    ],
)
def test_odd_version_strings_answer_as_today(
    http_url: str, version: str, infer: object, ready: tuple[int, object]
) -> None:
    v = quote(version, safe="")
    status, body = _ask(http_url, "POST", f"/v2/models/identity_fp32/versions/{v}/infer", BODY)
    if infer == 200:
        assert status == 200, body
    else:
        assert (status, body) == infer
    assert _ask(http_url, "GET", f"/v2/models/identity_fp32/versions/{v}/ready") == ready
