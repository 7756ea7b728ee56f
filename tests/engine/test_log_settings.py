"""Log settings (the logging extension) take effect on the server log, live."""

from __future__ import annotations

import io
import logging
import re

import pytest

from naiad import logs
from naiad.engine.log_settings import LogSettings, LogSettingValues

pytestmark = pytest.mark.protocol


@pytest.fixture
def server_log():
    """The ``naiad`` logger writing Triton-format lines to a buffer; restored after."""
    logger = logging.getLogger("naiad")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    buffer = io.StringIO()
    logs.configure(stream=buffer)
    yield logger, buffer
    logger.handlers[:] = saved[0]
    logger.setLevel(saved[1])
    logger.propagate = saved[2]


def test_switches_turn_kinds_of_message_off_and_on(server_log):
    logger, buffer = server_log
    settings = LogSettings()
    settings.update({"log_warning": False})
    logger.info("an info")
    logger.warning("a warning")
    logger.error("an error")
    logger.debug("a verbose line")
    text = buffer.getvalue()
    assert "an info" in text and "an error" in text
    assert "a warning" not in text and "a verbose line" not in text
    settings.update({"log_warning": True, "log_info": False, "log_verbose_level": 1})
    logger.info("second info")
    logger.warning("second warning")
    logger.debug("second verbose")
    text = buffer.getvalue()
    assert "second warning" in text and "second verbose" in text
    assert "second info" not in text
    # Child loggers' records reach the same handlers and obey the same switches.
    logging.getLogger("naiad.backends").info("child info")
    assert "child info" not in buffer.getvalue()


def test_log_format_changes_the_line_format_live(server_log):
    logger, buffer = server_log
    settings = LogSettings()
    logger.info("default line")
    settings.update({"log_format": "ISO8601"})
    logger.info("iso line")
    first, second = buffer.getvalue().splitlines()
    assert re.match(r"^I\d{4} \d\d:\d\d:\d\d\.\d{6} \d+ [\w.]+:\d+\] default line$", first)
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ I \d+ [\w.]+:\d+\] iso line$", second)


def test_server_log_settings_start_from_the_options(repo, serve):
    server = serve(repo, log_verbose=2, log_format="ISO8601")
    assert server.dataplane.log_settings.snapshot() == LogSettingValues(
        log_file="",
        log_info=True,
        log_warning=True,
        log_error=True,
        log_verbose_level=2,
        log_format="ISO8601",
    )
