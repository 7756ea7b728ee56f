"""Cross-site requests from a real browser (headless Chromium): a page of one server (its
``/v2`` document, which has no Content-Security-Policy, unlike the dashboard) sends
requests to another naiad server, as a malicious site would.

``http://localhost:<a>`` and ``http://127.0.0.1:<a>`` are two origins to the browser: the
target allows the second only, so one browser plays both the attacker and a web UI the
operator allowed with ``--http-cors-allow-origins``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tritonclient.http as httpclient
from selenium.webdriver.chrome.webdriver import WebDriver
from support.browser import chromium, require_chromium
from support.served import naiad_serve

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "model_repository"

# Runs in the page; the last argument is selenium's callback. Answers what the page
# could see: the status and body, or the browser's refusal.
FETCH = """
const [url, init, done] = arguments;
fetch(url, init)
  .then(async (r) => done({type: r.type, status: r.status, body: await r.text()}))
  .catch((e) => done({type: "refused", status: 0, body: String(e)}));
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    require_chromium()
    with chromium() as driver:
        driver.set_script_timeout(30)
        yield driver


def _fetch(driver: WebDriver, url: str, **init: Any) -> dict[str, Any]:
    return driver.execute_async_script(FETCH, url, init)  # type: ignore[no-any-return]


def test_a_foreign_page_cannot_load_a_model_and_an_allowed_one_can(
    tmp_path: Path, browser: WebDriver
) -> None:
    repo = tmp_path / "models"
    shutil.copytree(EXAMPLES / "add_sub", repo / "add_sub")
    with naiad_serve(repo) as page_server:
        allowed = f"http://127.0.0.1:{page_server.http_port}"
        flags = ("--model-control-mode", "explicit", "--http-cors-allow-origins", allowed)
        with naiad_serve(repo, *flags) as target:
            load = f"http://127.0.0.1:{target.http_port}/v2/repository/models/add_sub/load"
            triton = httpclient.InferenceServerClient(f"127.0.0.1:{target.http_port}")
            try:
                # The attack: a "simple" text/plain POST needs no preflight, so the browser
                # sends it (the page just cannot read the answer). The server refuses it.
                browser.get(f"http://localhost:{page_server.http_port}/v2")
                sent = _fetch(browser, load, method="POST", mode="no-cors", body="{}",
                              headers={"Content-Type": "text/plain"})  # fmt: skip
                assert sent["type"] == "opaque"
                assert not triton.is_model_ready("add_sub")
                # As JSON the browser asks first; the answer grants nothing, so it stops.
                sent = _fetch(browser, load, method="POST", body="{}",
                              headers={"Content-Type": "application/json"})  # fmt: skip
                assert sent["type"] == "refused"
                assert not triton.is_model_ready("add_sub")

                # The allowed origin's page: preflight answered, the load runs, the page
                # reads the answer, errors included.
                browser.get(f"{allowed}/v2")
                sent = _fetch(browser, load, method="POST", body="{}",
                              headers={"Content-Type": "application/json"})  # fmt: skip
                assert (sent["type"], sent["status"]) == ("cors", 200), sent
                assert triton.is_model_ready("add_sub")
                sent = _fetch(browser, load.replace("add_sub", "nope"), method="POST",
                              body="{}", headers={"Content-Type": "application/json"})  # fmt: skip
                assert sent["status"] == 500 and "nope" in sent["body"]
                # Even it cannot send what needs no preflight.
                sent = _fetch(browser, load, method="POST", body="{}",
                              headers={"Content-Type": "text/plain"})  # fmt: skip
                assert sent["status"] == 415
            finally:
                triton.close()
