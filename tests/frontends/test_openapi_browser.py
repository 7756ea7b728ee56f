"""``/docs`` in a real browser (headless Chromium) against ``naiad serve``: Swagger UI
loads from the package, the top bar picks a model's document, and "Try it out" /
"Execute" sends the document's example to the model and shows its answer.

A page of another origin that ``--http-cors-allow-origins`` allows reads the documents
and sends their examples; one it does not allow reads nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select
from support.browser import (
    assert_no_console_errors,
    chromium,
    find,
    require_chromium,
    screenshot,
    wait,
)
from support.served import Served, naiad_serve

from frontends.http import openapi_models

pytestmark = pytest.mark.e2e

FETCH = """
const [url, init, done] = arguments;
fetch(url, init)
  .then(async (r) => done({type: r.type, status: r.status, body: await r.text()}))
  .catch((e) => done({type: "refused", status: 0, body: String(e)}));
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return openapi_models.build(tmp_path_factory.mktemp("openapi") / "models")


@pytest.fixture(scope="module")
def server(repo: Path) -> Iterator[Served]:
    require_chromium()  # skip before starting a server that no browser will use
    with naiad_serve(repo) as s:
        yield s


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    with chromium() as driver:
        driver.set_script_timeout(30)
        yield driver


def execute(driver: WebDriver, block: str) -> str:
    """Open the operation ``block`` (Swagger UI's element id), press "Try it out" and
    "Execute"; the response body the page shows."""
    op = find(driver, f"#{block}")
    if "is-open" not in (op.get_attribute("class") or ""):
        op.find_element(By.CSS_SELECTOR, ".opblock-summary").click()
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, f"#{block} .try-out__btn")).click()
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, f"#{block} .execute")).click()
    status = wait(
        driver,
        lambda d: d.find_element(
            By.CSS_SELECTOR, f"#{block} .live-responses-table tbody .response-col_status"
        ),
    )
    body = find(driver, f"#{block} .live-responses-table .response-col_description pre")
    assert status.text.strip().startswith("200"), body.text
    return body.text


def test_pick_a_model_and_try_it_out(server: Served, browser: WebDriver) -> None:
    browser.get(f"http://127.0.0.1:{server.http_port}/docs/")
    picker = Select(find(browser, ".topbar select"))
    wait(browser, lambda d: len(picker.options) == 1 + 5)
    assert [o.text for o in picker.options] == ["All models", *sorted(
        ("ident", "shout", "warm_file", "warm_random", "words"))]  # fmt: skip
    picker.select_by_visible_text("ident")
    find(browser, "#operations-ident-infer_ident")
    assert find(browser, ".info .title").text.startswith("ident")
    answer = execute(browser, "operations-ident-infer_ident")
    assert "16.000000:15:class_15" in answer  # the labels of the example's classification
    screenshot(browser, "openapi-docs-ident.png")

    picker = Select(find(browser, ".topbar select"))
    picker.select_by_visible_text("shout")
    answer = execute(browser, "operations-OpenAI_API-openai_chat")
    assert "USER: HELLO" in answer
    assert_no_console_errors(browser)


def test_a_model_named_in_the_address_opens_its_document(
    server: Served, browser: WebDriver
) -> None:
    browser.get(f"http://127.0.0.1:{server.http_port}/docs/?model=warm_file")
    answer = execute(browser, "operations-warm_file-infer_warm_file")
    assert '"OUTPUT0"' in answer and "21" in answer  # its warmup file's 0, 7, 14, 21
    assert_no_console_errors(browser)


def _fetch(driver: WebDriver, url: str, **init: Any) -> dict[str, Any]:
    return driver.execute_async_script(FETCH, url, init)  # type: ignore[no-any-return]


def test_an_allowed_origins_page_reads_the_documents_and_runs_the_examples(
    repo: Path, browser: WebDriver
) -> None:
    import json

    with naiad_serve(repo, "--allow-grpc", "false") as page_server:
        allowed = f"http://127.0.0.1:{page_server.http_port}"
        with naiad_serve(repo, "--http-cors-allow-origins", allowed) as target:
            base = f"http://127.0.0.1:{target.http_port}"
            browser.get(f"{allowed}/v2")
            got = _fetch(browser, f"{base}/v2/models/ident/openapi.json")
            assert (got["type"], got["status"]) == ("cors", 200), got
            doc = json.loads(got["body"])
            op = doc["paths"]["/v2/models/ident/infer"]["post"]
            body = json.dumps(op["requestBody"]["content"]["application/json"]["example"])
            sent = _fetch(browser, f"{base}/v2/models/ident/infer", method="POST", body=body,
                          headers={"Content-Type": "application/json"})  # fmt: skip
            assert (sent["type"], sent["status"]) == ("cors", 200), sent  # after a preflight
            assert "class_15" in sent["body"]

            # the same page on another origin (localhost is not 127.0.0.1 to a browser)
            browser.get(f"http://localhost:{page_server.http_port}/v2")
            got = _fetch(browser, f"{base}/openapi.json")
            assert got["type"] == "refused"
            sent = _fetch(browser, f"{base}/v2/models/ident/infer", method="POST", body=body,
                          headers={"Content-Type": "application/json"})  # fmt: skip
            assert sent["type"] == "refused"
