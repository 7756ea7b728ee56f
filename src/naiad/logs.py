"""Triton-style log lines: ``I1121 02:25:39.123456 1234 file.py:42] message``."""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import TextIO


class TritonFormatter(logging.Formatter):
    """Triton's ``default`` and ``ISO8601`` log formats."""

    def __init__(self, iso8601: bool = False) -> None:
        super().__init__()
        self.iso8601 = iso8601
        self.pid = os.getpid()

    def format(self, record: logging.LogRecord) -> str:
        letter = record.levelname[:1] if record.levelno > logging.DEBUG else "I"
        where = f"{os.path.basename(record.pathname)}:{record.lineno}"
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + self.formatException(record.exc_info)
        ts = record.created
        if self.iso8601:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))
            return f"{stamp} {letter} {self.pid} {where}] {message}"
        micros = int((ts - int(ts)) * 1_000_000)
        stamp = time.strftime("%m%d %H:%M:%S", time.localtime(ts))
        return f"{letter}{stamp}.{micros:06d} {self.pid} {where}] {message}"


class LevelSwitch(logging.Filter):
    """Drops the kinds of message the log settings switch off.

    Verbose messages are DEBUG records, kept while the verbose level is
    above zero; info, warning and error each have their own switch.
    """

    def __init__(self, info: bool, warning: bool, error: bool, verbose: int) -> None:
        super().__init__()
        self.info = info
        self.warning = warning
        self.error = error
        self.verbose = verbose

    def filter(self, record: logging.LogRecord) -> bool:
        level = record.levelno
        if level >= logging.ERROR:
            return self.error
        if level >= logging.WARNING:
            return self.warning
        if level >= logging.INFO:
            return self.info
        return self.verbose > 0


def configure(
    verbose: int = 0, log_format: str = "default", log_file: str = "", stream: TextIO | None = None
) -> None:
    """Send the ``naiad`` logger to stderr (or a file) in Triton's format."""
    logger = logging.getLogger("naiad")
    for old in list(logger.handlers):
        logger.removeHandler(old)
    handler: logging.Handler
    if log_file:
        handler = logging.FileHandler(log_file)
    else:
        handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(TritonFormatter(iso8601=log_format == "ISO8601"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if verbose > 0 else logging.INFO)
    logger.propagate = False
