"""The dashboard's Residency card in a real browser (headless Chromium) against ``naiad
serve`` with a memory budget: which models hold memory, the pinned one, and the one
unloaded to fit the budget with its reason. The state is reached with tritonclient and
waited for through /dashboard/api/residency before the page opens. Screenshots go to
$NAIAD_TEST_ARTIFACTS (else build/test-artifacts/dashboard/).
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from engine.residency_models import MiB, X, infer_http, python_model
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from support.browser import (
    PHONE,
    WAIT,
    assert_no_console_errors,
    chromium,
    find,
    require_chromium,
    screenshot,
    set_viewport,
    shown_bytes,
    wait,
)
from support.served import Served, naiad_serve

from naiad.engine.residency import BUDGET_REASON

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three Python models that each hold a 24 MiB table, in the server's process."""
    require_chromium()  # skip before writing models that no browser will look at
    repo = tmp_path_factory.mktemp("residency")
    for k, name in enumerate(("m0", "m1", "m2")):
        python_model(repo, name, k, size=24 * MiB)
    return repo


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    with chromium() as driver:
        yield driver


def url(served: Served, route: str = "") -> str:
    return f"http://127.0.0.1:{served.http_port}/dashboard/{route}"


def residency(served: Served) -> dict[str, Any]:
    with urllib.request.urlopen(url(served, "api/residency")) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def residency_until(served: Served, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The residency view once ``done`` holds for it (a load or an unload may still be
    finishing when a request has its answer)."""
    deadline = time.monotonic() + WAIT
    while True:
        doc = residency(served)
        if done(doc):
            return doc
        assert time.monotonic() < deadline, doc
        time.sleep(0.02)


def by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["name"]: m for m in doc["models"]}


def infer(served: Served, model: str) -> None:
    answer = infer_http(served.http_port, model)
    np.testing.assert_array_equal(answer, X + int(model[1:]))


def row_facts(driver: WebDriver, model: str) -> dict[str, str]:
    """One row of the residency table as {state, pinned, column class: text}, read at
    once (the table is replaced every second)."""
    return wait(  # type: ignore[no-any-return]
        driver,
        lambda d: d.execute_script(
            "const row = document.querySelector("
            '`#residency-models tr[data-model="${arguments[0]}"]`);'
            "if (!row) return null;"
            "const facts = {state: row.dataset.state, pinned: row.dataset.pinned};"
            "for (const td of row.querySelectorAll('td'))"
            "  facts[[...td.classList].find((c) => c.startsWith('c-'))] = td.textContent.trim();"
            "return facts;",
            model,
        ),
    )


def test_the_server_page_shows_residency(repo: Path, browser: WebDriver) -> None:
    flags = ("--model-memory-budget", "56MiB", "--model-idle-unload-secs", "3600")
    with naiad_serve(repo, *flags, "--model-pin", "m0") as served:
        infer(served, "m1")
        infer(served, "m2")  # m0 is pinned: m1, the least recently used, makes room
        doc = residency_until(
            served,
            lambda doc: [m["state"] for m in doc["models"]] == ["loaded", "unloaded", "loaded"],
        )
        models = by_name(doc)
        assert models["m1"]["evictions"] == {"budget": 1}
        assert models["m1"]["reason"] == BUDGET_REASON

        browser.get(url(served))
        card = find(browser, '#residency-box[data-residency="on"] #residency')
        assert card.find_element(By.TAG_NAME, "h2").text == "Residency"
        assert find(browser, "#residency-budget").text == "56 MiB"
        assert find(browser, "#residency-idle").text == "1h 0m 0s"
        used = find(browser, "#residency-used")
        assert used.get_attribute("data-value") == str(doc["used_bytes"])
        assert used.text == shown_bytes(doc["used_bytes"])
        share = 100 * doc["used_bytes"] / doc["budget_bytes"]
        assert find(browser, "#residency-share").text == f"{float(f'{share:.3g}'):g}% of the budget"
        assert find(browser, "#residency-loaded").text == "2 of 3"

        pinned = row_facts(browser, "m0")
        assert pinned["state"] == "loaded" and pinned["pinned"] == "true"
        assert pinned["c-state"] == "loaded" and pinned["c-pinned"] == "pinned"
        assert pinned["c-memory"] == shown_bytes(models["m0"]["memory_bytes"])
        assert pinned["c-evictions"] == "0 / 0"
        loaded = row_facts(browser, "m2")
        assert loaded["state"] == "loaded" and loaded["pinned"] == "false"
        assert loaded["c-pinned"] == "no" and loaded["c-loads"] == "1"
        assert loaded["c-waits"].startswith("1 · avg ") and loaded["c-waits"].endswith(" ms")
        evicted = row_facts(browser, "m1")
        assert evicted["state"] == "unloaded" and evicted["c-state"] == "unloaded"
        assert evicted["c-memory"] == "—" and evicted["c-idle"] == "—"
        assert evicted["c-evictions"] == "1 / 0"
        assert evicted["c-reason"] == BUDGET_REASON
        screenshot(browser, "server-residency.png")
        # on a phone the wide table scrolls in its own box: the page does not widen
        set_viewport(browser, *PHONE)
        width, inner = browser.execute_script(
            "return [document.documentElement.scrollWidth, window.innerWidth]"
        )
        assert width <= inner == PHONE[0]
        screenshot(browser, "phone-server-residency.png")
        set_viewport(browser, 1280, 900)

        # The Models page marks the pinned model; the eviction's reason is no error there.
        browser.find_element(By.CSS_SELECTOR, 'a[data-nav="models"]').click()
        row = find(browser, '#models-table tr[data-model="m0"][data-pinned="true"]')
        assert row.find_element(By.CSS_SELECTOR, "th .tag.pinned").text == "pinned"
        m1 = find(browser, '#models-table tr[data-model="m1"]')
        assert m1.find_element(By.CSS_SELECTOR, ".reason.calm").text == BUDGET_REASON
        assert not browser.find_elements(By.CSS_SELECTOR, '#models-table tr[data-model="m2"] .tag')
        screenshot(browser, "models-residency.png")
        assert_no_console_errors(browser)


def test_no_card_without_residency(repo: Path, browser: WebDriver) -> None:
    with naiad_serve(repo, "--model-control-mode", "explicit") as served:
        assert residency(served) == {"enabled": False, "models": []}
        browser.get(url(served))
        find(browser, '#residency-box[data-residency="off"]')
        assert not browser.find_elements(By.ID, "residency")
        assert_no_console_errors(browser)
