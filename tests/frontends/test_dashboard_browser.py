"""The dashboard in a real browser (headless Chromium) against ``naiad serve``.

Each test drives the pages as a person would (links, buttons, the confirmation
dialog, file uploads) and checks what the page shows, and where the page changes
the server, checks with tritonclient that the server agrees. Screenshots of the
pages go to $NAIAD_TEST_ARTIFACTS (else build/test-artifacts/dashboard/).
"""

from __future__ import annotations

import json
import shutil
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement
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

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "model_repository"
DIGITS = ROOT / "examples" / "runner" / "digits"
MODELS = sorted(p.parent.name for p in EXAMPLES.glob("*/1"))
FORBIDDEN = "This API is restricted, expecting header 'admin-key'"


@pytest.fixture(scope="module")
def server() -> Iterator[Served]:
    require_chromium()  # skip before starting a server that no browser will use
    with naiad_serve(EXAMPLES, "--model-control-mode", "explicit", "--load-model", "*") as s:
        yield s


@pytest.fixture(scope="module")
def restricted() -> Iterator[Served]:
    require_chromium()
    flags = ("--model-control-mode", "explicit", "--load-model", "*")
    with naiad_serve(
        EXAMPLES, *flags, "--http-restricted-api", "model-repository:admin-key=secret"
    ) as s:
        yield s


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    with chromium() as driver:
        yield driver


def client(served: Served) -> httpclient.InferenceServerClient:
    return httpclient.InferenceServerClient(f"127.0.0.1:{served.http_port}")


def url(served: Served, route: str = "") -> str:
    return f"http://127.0.0.1:{served.http_port}/dashboard/{route}"


def texts(driver: WebDriver, css: str) -> list[str]:
    return [e.text.strip() for e in driver.find_elements(By.CSS_SELECTOR, css)]


def state_of(driver: WebDriver, model: str) -> str | None:
    """The state the Models page shows for ``model`` (its first version's row)."""
    return driver.execute_script(  # type: ignore[no-any-return]
        'const row = document.querySelector(`#models-table tr[data-model="${arguments[0]}"]`);'
        "return row ? row.dataset.state : null;",
        model,
    )


def confirm(driver: WebDriver) -> None:
    """Press the dialog's confirm button, which has the focus when the dialog opens."""
    dialog = find(driver, "dialog#confirm-dialog[open]")
    ok = dialog.find_element(By.ID, "confirm-ok")
    wait(driver, lambda d: d.switch_to.active_element == ok)
    ok.click()
    wait(driver, lambda d: not dialog.get_attribute("open"))


def type_into(element: WebElement, text: str) -> None:
    element.clear()
    element.send_keys(text)


def run_model(driver: WebDriver) -> WebElement:
    """Press Run and wait for the result's status line (ok or error)."""
    find(driver, "#tryit-run").click()
    return wait(  # type: ignore[no-any-return]
        driver,
        lambda d: d.find_element(By.CSS_SELECTOR, "#tryit-status [data-outcome]"),
    )


def cells(driver: WebDriver, output: str) -> list[str]:
    return texts(driver, f"#output-{output} tbody td")


def test_models_page_lists_every_example_model_ready(server: Served, browser: WebDriver) -> None:
    browser.get(url(server))
    find(browser, "#live-models")  # the Server page is the first page
    browser.find_element(By.CSS_SELECTOR, 'a[data-nav="models"]').click()
    wait(browser, lambda d: all(state_of(d, m) == "READY" for m in MODELS))
    assert sorted(set(texts(browser, "#models-table tbody th a"))) == MODELS
    repeat = browser.find_element(By.CSS_SELECTOR, '#models-table tr[data-model="repeat"]')
    assert "decoupled" in repeat.text
    identity = browser.find_element(By.CSS_SELECTOR, '#models-table tr[data-model="identity"]')
    assert "max batch 4" in identity.text and "2 × CPU" in identity.text
    screenshot(browser, "models.png")
    dark = {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", dark)
    screenshot(browser, "models-dark.png")
    assert_no_console_errors(browser)


def test_a_failed_load_shows_its_error(tmp_path: Path, browser: WebDriver) -> None:
    repo = tmp_path / "models"
    shutil.copytree(EXAMPLES / "add_sub", repo / "add_sub")
    (repo / "broken" / "1").mkdir(parents=True)
    (repo / "broken" / "1" / "model.onnx").write_bytes(b"not an onnx file")
    (repo / "broken" / "config.pbtxt").write_text('backend: "onnxruntime"\n')
    with naiad_serve(repo, "--exit-on-error=false") as served:
        browser.get(url(served, "#/models"))
        wait(browser, lambda d: state_of(d, "broken") == "UNAVAILABLE")
        row = browser.find_element(By.CSS_SELECTOR, '#models-table tr[data-model="broken"]')
        reason = row.find_element(By.CSS_SELECTOR, ".reason").text
        # the server's own words, as the repository index gives them
        triton = client(served)
        index = triton.get_model_repository_index()
        triton.close()
        expected = next(m["reason"] for m in index if m["name"] == "broken")
        assert reason == expected and "model.onnx" in reason
        assert state_of(browser, "add_sub") == "READY"
        # not explicit mode: the buttons say why they cannot be used
        assert "--model-control-mode explicit" in find(browser, "#mode-note").text
        unload = browser.find_element(
            By.CSS_SELECTOR, 'button[data-action="unload"][data-model="add_sub"]'
        )
        assert not unload.is_enabled()
        screenshot(browser, "models-failed-load.png")
        assert_no_console_errors(browser)


def two_versions(tmp_path: Path, **parameters: str) -> Path:
    """A repository with the example add_sub as versions 1 and 2, and naiad parameters."""
    repo = tmp_path / "models"
    shutil.copytree(EXAMPLES / "add_sub", repo / "add_sub")
    shutil.copytree(repo / "add_sub" / "1", repo / "add_sub" / "2")
    config = repo / "add_sub" / "config.pbtxt"
    lines = [f'parameters {{ key: "naiad.{k}" value: {{ string_value: "{v}" }} }}\n'
             for k, v in parameters.items()]  # fmt: skip
    config.write_text(config.read_text() + "version_policy: { all { } }\n" + "".join(lines))
    return repo


def shadowed(served: Served, count: int) -> None:
    """Until the server's shadow of add_sub has seen ``count`` requests (they run after
    the answers)."""
    deadline = time.monotonic() + WAIT
    while True:
        with urllib.request.urlopen(url(served, "api/shadows")) as response:
            [seen] = json.loads(response.read())["shadows"]
        if seen["requests"] + seen["skipped"] >= count:
            return
        assert time.monotonic() < deadline, seen
        time.sleep(0.02)


def test_a_models_page_shows_its_traffic_split(tmp_path: Path, browser: WebDriver) -> None:
    repo = two_versions(tmp_path, traffic_split="1:3,2:1", traffic_sticky="user")
    with naiad_serve(repo) as served:
        browser.get(url(served, "#/models/add_sub"))
        shown = find(browser, "#model-split").text
        assert shown == "version 1: 75% · version 2: 25% (sticky by parameter 'user')"
        screenshot(browser, "model-split.png")
        assert_no_console_errors(browser)


def test_a_models_page_shows_its_shadow(tmp_path: Path, browser: WebDriver) -> None:
    with naiad_serve(two_versions(tmp_path, shadow_version="2")) as served:
        triton = client(served)
        x = httpclient.InferInput("INPUT0", [4], "FP32")
        x.set_data_from_numpy(np.arange(4, dtype=np.float32))
        y = httpclient.InferInput("INPUT1", [4], "FP32")
        y.set_data_from_numpy(np.ones(4, dtype=np.float32))
        for sent in range(1, 4):
            triton.infer("add_sub", [x, y], model_version="1")
            shadowed(served, sent)  # a quiet server: each shadow ends before the next request
        triton.close()
        browser.get(url(served, "#/models/add_sub"))
        assert find(browser, "#shadow-candidate").text == "add_sub:2"
        assert find(browser, "#shadow-requests").text == "3 / 0 / 0"
        assert find(browser, "#shadow-diff").text == "0 / 0"  # the same model twice
        assert find(browser, "#shadow-agreement").text == "100%"
        screenshot(browser, "model-shadow.png")
        assert_no_console_errors(browser)


def test_unload_and_load_from_the_models_page(server: Served, browser: WebDriver) -> None:
    triton = client(server)
    try:
        browser.get(url(server, "#/models"))
        wait(browser, lambda d: state_of(d, "add_sub") == "READY")
        find(browser, 'button[data-action="unload"][data-model="add_sub"]').click()
        confirm(browser)
        wait(browser, lambda d: state_of(d, "add_sub") == "UNAVAILABLE")
        assert "Unloaded add_sub" in find(browser, "#action-result").text
        assert not triton.is_model_ready("add_sub")

        find(browser, 'button[data-action="load"][data-model="add_sub"]').click()
        confirm(browser)
        wait(browser, lambda d: state_of(d, "add_sub") == "READY")
        assert "Loaded add_sub" in find(browser, "#action-result").text
        assert triton.is_model_ready("add_sub")

        # Esc cancels: nothing is sent, the model stays loaded
        find(browser, 'button[data-action="unload"][data-model="add_sub"]').click()
        dialog = find(browser, "dialog#confirm-dialog[open]")
        browser.switch_to.active_element.send_keys(Keys.ESCAPE)
        wait(browser, lambda d: not dialog.get_attribute("open"))
        assert triton.is_model_ready("add_sub")
        assert state_of(browser, "add_sub") == "READY"
        assert_no_console_errors(browser)
    finally:
        if not triton.is_model_ready("add_sub"):
            triton.load_model("add_sub")
        triton.close()


def test_add_sub_from_its_page(server: Served, browser: WebDriver) -> None:
    browser.get(url(server, "#/models/add_sub"))
    type_into(find(browser, "#input-INPUT0"), "[1, 2, 3, 4]")
    type_into(find(browser, "#input-INPUT1"), "[10, 20, 30, 40]")
    status = run_model(browser)
    assert status.get_attribute("data-outcome") == "ok", status.text
    assert cells(browser, "OUTPUT0") == ["11", "22", "33", "44"]
    assert cells(browser, "OUTPUT1") == ["-9", "-18", "-27", "-36"]
    # the rest of the page: metadata, the config as text, statistics that count the run
    assert "INPUT0" in find(browser, "#meta-inputs").text
    assert 'name: "add_sub"' in find(browser, "#config-pbtxt").text
    wait(browser, lambda d: int(d.find_element(By.ID, "stats-success-1").text) >= 1)
    # what the version took when it loaded, as the statistics say it
    stats = client(server).get_inference_statistics("add_sub")["model_stats"][0]
    [usage] = stats["memory_usage"]
    assert find(browser, "#stats-memory-1").text == f"{shown_bytes(usage['byte_size'])} host"
    screenshot(browser, "model-add_sub.png")
    assert_no_console_errors(browser)


@pytest.mark.parametrize(("digit", "label"), [(3, "three"), (7, "seven")])
def test_image_upload_classifies_a_digit(
    server: Served, browser: WebDriver, digit: int, label: str
) -> None:
    browser.get(url(server, "#/models/image_classifier"))
    find(browser, "#invert-IMAGE").click()
    find(browser, "#file-IMAGE").send_keys(str(DIGITS / f"{digit}.png"))
    find(browser, "#preview-IMAGE canvas")  # the resized image is shown
    status = run_model(browser)
    assert status.get_attribute("data-outcome") == "ok", status.text
    rows = browser.find_elements(By.CSS_SELECTOR, "#output-PROBABILITIES tbody tr")
    assert len(rows) == 5  # min(5, ten classes)
    assert rows[0].get_attribute("data-label") == label
    assert rows[0].find_element(By.CSS_SELECTOR, "td.label").text == label
    screenshot(browser, f"tryit-image-{digit}.png")
    if digit == 3:
        screenshot(browser, "tryit-image.png")
    assert_no_console_errors(browser)


def test_text_model_and_streamed_responses(server: Served, browser: WebDriver) -> None:
    browser.get(url(server, "#/models/string_upper"))
    type_into(find(browser, "#input-TEXT"), "hello\nnaiad dashboard")
    status = run_model(browser)
    assert status.get_attribute("data-outcome") == "ok", status.text
    assert cells(browser, "UPPER") == ["HELLO", "NAIAD DASHBOARD"]

    browser.get(url(server, "#/models/repeat"))
    type_into(find(browser, "#input-IN"), "[5, 6, 7]")
    status = run_model(browser)
    assert status.get_attribute("data-outcome") == "ok", status.text
    assert status.get_attribute("data-count") == "3"
    rows = browser.find_elements(By.CSS_SELECTOR, "#stream-table tbody tr")
    assert [r.get_attribute("data-index") for r in rows] == ["0", "1", "2"]
    for row, value in zip(rows, (5, 6, 7), strict=True):
        assert f'"OUT":{value}' in row.text
    screenshot(browser, "model-repeat-stream.png")
    assert_no_console_errors(browser)


NON_FINITE_MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            with np.errstate(divide="ignore", invalid="ignore"):
                y = x / np.array([0, 0, 0, 1], np.float32)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", y)]))
        return out
"""

NON_FINITE_STREAM = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            for x in pb_utils.get_input_tensor_by_name(request, "X").as_numpy():
                with np.errstate(divide="ignore", invalid="ignore"):
                    y = np.array([x], np.float32) / np.float32(0)
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("Y", y)]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""


def test_non_finite_outputs_are_shown(tmp_path: Path, browser: WebDriver) -> None:
    """The server writes NaN and infinities as Triton does (bare NaN, Infinity), which
    JSON.parse refuses: the page reads and shows them, in a response and a stream."""
    repo = tmp_path / "models"
    for name, code, extra, dims in (
        ("non_finite", NON_FINITE_MODEL, "", "4"),
        (
            "non_finite_stream",
            NON_FINITE_STREAM,
            "model_transaction_policy { decoupled: true }",
            "-1",
        ),
    ):
        (repo / name / "1").mkdir(parents=True)
        (repo / name / "1" / "model.py").write_text(code)
        (repo / name / "config.pbtxt").write_text(
            f'backend: "python"\nmax_batch_size: 0\n{extra}\n'
            f'input [ {{ name: "X" data_type: TYPE_FP32 dims: [ {dims} ] }} ]\n'
            f'output [ {{ name: "Y" data_type: TYPE_FP32 dims: [ {dims} ] }} ]\n'
        )
    with naiad_serve(repo) as served:
        browser.get(url(served, "#/models/non_finite"))
        type_into(find(browser, "#input-X"), "[1, -1, 0, 3]")
        status = run_model(browser)
        assert status.get_attribute("data-outcome") == "ok", status.text
        assert cells(browser, "Y") == ["Infinity", "-Infinity", "NaN", "3"]

        browser.get(url(served, "#/models/non_finite_stream"))
        type_into(find(browser, "#input-X"), "[0, 1, -1]")
        status = run_model(browser)
        assert status.get_attribute("data-outcome") == "ok", status.text
        rows = browser.find_elements(By.CSS_SELECTOR, "#stream-table tbody tr")
        shown = [r.find_element(By.CSS_SELECTOR, "code").text for r in rows]
        assert shown == ['{"Y":[NaN]}', '{"Y":[Infinity]}', '{"Y":[-Infinity]}']
        assert_no_console_errors(browser)


def test_server_page_shows_live_throughput(server: Served, browser: WebDriver) -> None:
    browser.get(url(server))
    assert find(browser, "#server-version").text.startswith("naiad ")
    assert find(browser, "#server-mode").text == "explicit"
    assert "model_repository" in find(browser, "#server-extensions").text
    uptime = find(browser, "#server-uptime").text
    assert uptime.endswith("s")

    stop = threading.Event()
    sent = [0]

    def load() -> None:
        triton = client(server)
        x = httpclient.InferInput("INPUT0", [4], "FP32")
        x.set_data_from_numpy(np.arange(4, dtype=np.float32))
        y = httpclient.InferInput("INPUT1", [4], "FP32")
        y.set_data_from_numpy(np.ones(4, dtype=np.float32))
        try:
            while not stop.is_set():
                triton.infer("add_sub", [x, y])
                sent[0] += 1
        finally:
            triton.close()

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    try:
        chart = find(browser, "#chart-throughput")
        wait(
            browser,
            lambda d: (
                float(d.find_element(By.ID, "throughput-now").get_attribute("data-value") or 0) > 0
            ),
        )
        wait(browser, lambda d: int(chart.get_attribute("data-nonzero") or 0) >= 3)
        assert int(chart.get_attribute("data-points") or 0) >= 3
        latency = browser.find_element(By.ID, "chart-latency")
        wait(browser, lambda d: int(latency.get_attribute("data-nonzero") or 0) >= 1)
        row = find(browser, '#live-models tr[data-model="add_sub"]')
        assert int(row.find_element(By.CSS_SELECTOR, ".c-success").text.replace("\u2009", "")) > 0
        assert row.find_element(By.CSS_SELECTOR, ".c-p99").text != "—"
        [usage] = client(server).get_inference_statistics("add_sub")["model_stats"][0][
            "memory_usage"
        ]
        memory = row.find_element(By.CSS_SELECTOR, ".c-memory").text
        assert memory == shown_bytes(usage["byte_size"])
        screenshot(browser, "server.png")
    finally:
        stop.set()
        thread.join(30)
    assert sent[0] > 0
    assert_no_console_errors(browser)


def test_restricted_unload_needs_the_header(restricted: Served, browser: WebDriver) -> None:
    triton = client(restricted)
    admin = {"admin-key": "secret"}
    try:
        browser.get(url(restricted, "#/models"))
        # the index is restricted: the page says so and lists the loaded models it can see
        wait(browser, lambda d: FORBIDDEN in d.find_element(By.ID, "banner").text)
        assert "Access settings" in find(browser, "#banner").text
        wait(browser, lambda d: state_of(d, "add_sub") == "READY")
        find(browser, 'button[data-action="unload"][data-model="add_sub"]').click()
        confirm(browser)
        wait(browser, lambda d: FORBIDDEN in d.find_element(By.ID, "action-result").text)
        assert FORBIDDEN in find(browser, "#banner").text
        assert triton.is_model_ready("add_sub")
        assert_no_console_errors(browser, expected=["status of 403"])
        # the Server page hides the host's details from a browser without the header
        browser.find_element(By.CSS_SELECTOR, 'a[data-nav="server"]').click()
        hidden = "hidden: needs the admin-key header (Access settings)"
        wait(browser, lambda d: d.find_element(By.ID, "server-repositories").text == hidden)
        assert find(browser, "#server-process").text == hidden
        assert str(EXAMPLES) not in browser.page_source

        browser.find_element(By.CSS_SELECTOR, "#server-process a[href='#/settings']").click()
        type_into(find(browser, "#header-name-0"), "admin-key")
        type_into(find(browser, "#header-value-0"), "secret")
        find(browser, "#access-save").click()
        wait(browser, lambda d: "admin-key" in d.find_element(By.ID, "access-status").text)
        assert "admin-key" in find(browser, "#access-needs").text
        screenshot(browser, "settings.png")
        # with the header the Server page shows where the repository lives and the pid
        browser.find_element(By.CSS_SELECTOR, 'a[data-nav="server"]').click()
        wait(browser, lambda d: str(EXAMPLES) in d.find_element(By.ID, "server-repositories").text)
        assert find(browser, "#server-process").text == f"pid {restricted.pid}"

        browser.find_element(By.CSS_SELECTOR, 'a[data-nav="models"]').click()
        wait(browser, lambda d: state_of(d, "string_upper") == "READY")
        assert not browser.find_elements(By.ID, "index-fallback")  # the real index now
        find(browser, 'button[data-action="unload"][data-model="add_sub"]').click()
        confirm(browser)
        wait(browser, lambda d: state_of(d, "add_sub") == "UNAVAILABLE")
        assert not triton.is_model_ready("add_sub")
        assert_no_console_errors(browser)
    finally:
        if not triton.is_model_ready("add_sub"):
            triton.load_model("add_sub", headers=admin)
        triton.close()


def test_bad_input_shows_the_message_and_the_page_recovers(
    server: Served, browser: WebDriver
) -> None:
    browser.get(url(server, "#/models/add_sub"))
    type_into(find(browser, "#input-INPUT0"), "[1, 2]")
    status = run_model(browser)
    assert status.get_attribute("data-outcome") == "error"
    assert "unexpected shape for input 'INPUT0'" in status.text
    assert "unexpected shape for input 'INPUT0'" in find(browser, "#banner").text
    assert_no_console_errors(browser, expected=["status of 400"])

    type_into(find(browser, "#input-INPUT0"), "[1, 2,")  # not JSON: the form says so
    status = run_model(browser)
    assert status.get_attribute("data-outcome") == "form-error"
    assert "INPUT0: not valid JSON" in status.text
    textarea = browser.find_element(By.ID, "input-INPUT0")
    assert textarea.get_attribute("aria-invalid") == "true"
    assert browser.switch_to.active_element == textarea

    type_into(textarea, "[1, 1, 1, 1]")
    type_into(find(browser, "#input-INPUT1"), "[1, 2, 3, 4]")
    status = run_model(browser)
    assert status.get_attribute("data-outcome") == "ok", status.text
    assert cells(browser, "OUTPUT0") == ["2", "3", "4", "5"]
    assert_no_console_errors(browser)


def test_phone_width_has_no_page_overflow(server: Served, browser: WebDriver) -> None:
    set_viewport(browser, *PHONE)
    for route, name in (("#/models", "phone-models.png"), ("#/", "phone-server.png"),
                        ("#/models/image_classifier", "phone-model.png")):  # fmt: skip
        browser.get(url(server, route))
        find(browser, "#models-table, #live-models, #tryit-form")
        width, inner = browser.execute_script(
            "return [document.documentElement.scrollWidth, window.innerWidth]"
        )
        assert inner == PHONE[0]
        assert width <= inner, f"{route}: the page is {width}px wide in a {inner}px window"
        screenshot(browser, name)
    # the wide models table scrolls inside its own box instead
    browser.get(url(server, "#/models"))
    wrap = find(browser, "#models-table").find_element(By.XPATH, "..")
    scroll, client_width = browser.execute_script(
        "return [arguments[0].scrollWidth, arguments[0].clientWidth]", wrap
    )
    assert scroll > client_width
    assert_no_console_errors(browser)


def test_keyboard_reaches_the_navigation(server: Served, browser: WebDriver) -> None:
    browser.get(url(server))
    find(browser, "#live-models")
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.TAB)
    first = browser.switch_to.active_element
    assert first.get_attribute("id") == "skip-link"
    focused: list[str] = []
    for _ in range(6):
        browser.switch_to.active_element.send_keys(Keys.TAB)
        focused.append(browser.switch_to.active_element.text)
        if focused[-1] == "Models":
            break
    assert focused[-1] == "Models", focused
    assert browser.switch_to.active_element.get_attribute("aria-current") is None
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    wait(browser, lambda d: d.execute_script("return location.hash") == "#/models")
    find(browser, "#models-table")
    heading = browser.find_element(By.TAG_NAME, "h1")
    assert heading.text == "Models"
    wait(browser, lambda d: d.switch_to.active_element == heading)  # focus follows the page
    active = browser.find_element(By.CSS_SELECTOR, 'a[data-nav="models"]')
    assert active.get_attribute("aria-current") == "page"
    assert_no_console_errors(browser)
