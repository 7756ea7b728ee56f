"""Headless Chromium driven by Selenium, for the dashboard's browser tests.

The Debian packages (``chromium``, ``chromium-driver``) provide both binaries;
Selenium is pointed at the driver explicitly so that selenium-manager never
downloads one. When they are missing and this is a root shell with apt-get,
they are installed once (under a file lock: parallel sessions share the host);
otherwise the test is skipped with the reason.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
_LOCK = Path(tempfile.gettempdir()) / "naiad-tests-chromium-install.lock"
REPO_ROOT = Path(__file__).resolve().parents[2]

#: Window sizes the tests use: a laptop and a phone (CSS pixels).
LAPTOP = (1280, 900)
PHONE = (390, 844)


def _present() -> bool:
    return CHROMIUM.exists() and CHROMEDRIVER.exists()


def _apt_install() -> str:
    """Install the Debian packages; the error text when that was not possible."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "not root with apt-get"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "chromium", "chromium-driver"]
    with _LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another session may be installing right now
        if _present():
            return ""
        done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:  # stale package lists: refresh once, then try again
            subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, timeout=600)
            done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
        return "" if done.returncode == 0 else done.stderr.strip()[-500:]


def require_chromium() -> None:
    """Skip the test unless Chromium and its driver are (or can be made) present."""
    if _present():
        return
    why = _apt_install()
    if not _present():
        pytest.skip(
            f"needs {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium chromium-driver): {why}"
        )


@contextlib.contextmanager
def chromium(size: tuple[int, int] = LAPTOP) -> Iterator[webdriver.Chrome]:
    """A fresh headless Chromium (its own profile folder), quit afterwards."""
    require_chromium()
    with tempfile.TemporaryDirectory(prefix="naiad-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for arg in (
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-extensions",
            "--disable-default-apps", f"--window-size={size[0]},{size[1]}",
            f"--user-data-dir={profile}",
        ):  # fmt: skip
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        service = Service(executable_path=str(CHROMEDRIVER))
        driver = webdriver.Chrome(service=service, options=options)
        try:
            set_viewport(driver, *size)
            yield driver
        finally:
            driver.quit()


def set_viewport(driver: webdriver.Chrome, width: int, height: int) -> None:
    """Make the page's viewport (not the window) ``width`` x ``height`` CSS pixels."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
    )


def severe_console_errors(driver: webdriver.Chrome, expected: Iterable[str] = ()) -> list[str]:
    """The browser console's SEVERE entries since the last call, less those that
    contain one of ``expected`` (a 403 or 400 the test provoked logs one)."""
    allowed = list(expected)
    return [
        entry["message"]
        for entry in driver.get_log("browser")
        if entry["level"] == "SEVERE" and not any(text in entry["message"] for text in allowed)
    ]


def assert_no_console_errors(driver: webdriver.Chrome, expected: Iterable[str] = ()) -> None:
    errors = severe_console_errors(driver, expected)
    assert not errors, "browser console errors:\n" + "\n".join(errors)


def artifacts_dir() -> Path:
    """Where screenshots go: $NAIAD_TEST_ARTIFACTS, else build/test-artifacts/dashboard."""
    folder = Path(
        os.environ.get("NAIAD_TEST_ARTIFACTS")
        or REPO_ROOT / "build" / "test-artifacts" / "dashboard"
    )
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def screenshot(driver: webdriver.Chrome, name: str, full_page: bool = True) -> Path:
    """Save a PNG of the page (the whole page's height when ``full_page``)."""
    path = artifacts_dir() / name
    if full_page:
        metrics = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
        size = metrics["cssContentSize"]
        shot = driver.execute_cdp_cmd(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {
                    "x": 0,
                    "y": 0,
                    "width": size["width"],
                    "height": size["height"],
                    "scale": 1,
                },
            },
        )
        path.write_bytes(base64.b64decode(shot["data"]))
    else:
        driver.save_screenshot(str(path))
    return path


__all__ = [
    "LAPTOP",
    "PHONE",
    "artifacts_dir",
    "assert_no_console_errors",
    "chromium",
    "require_chromium",
    "screenshot",
    "set_viewport",
    "severe_console_errors",
]


#: Seconds a page, a model load or an inference on a busy machine may take.
WAIT = 20


def wait(
    driver: webdriver.Chrome, condition: Callable[[webdriver.Chrome], Any], timeout: float = WAIT
) -> Any:
    """Until ``condition`` holds: pages re-render parts of themselves, so an element found
    a moment ago may be gone (stale) and is looked for again."""
    return WebDriverWait(
        driver, timeout, poll_frequency=0.05, ignored_exceptions=[StaleElementReferenceException]
    ).until(condition)


def find(driver: webdriver.Chrome, css: str) -> WebElement:
    """The element once it is in the page (pages render after their fetches)."""
    return wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, css))  # type: ignore[no-any-return]


def shown_bytes(size: int) -> str:
    """A size as the dashboard writes it (dom.js formatBytes): 3 significant digits."""
    value, unit = float(size), "B"
    for bigger in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{int(value)} B" if unit == "B" else f"{float(f'{value:.3g}'):g} {unit}"
