"""``pb_utils.Logger``: model log lines go to the server's log, under its settings."""

from __future__ import annotations

import enum
import inspect
import os

from triton_python_backend_utils import _host
from triton_python_backend_utils._text import as_text


class LogLevel(enum.IntEnum):
    INFO = 0
    WARNING = 1
    ERROR = 2
    VERBOSE = 3


class Logger:
    INFO = LogLevel.INFO
    WARNING = LogLevel.WARNING
    ERROR = LogLevel.ERROR
    VERBOSE = LogLevel.VERBOSE

    @staticmethod
    def log(message: str, level: int = LogLevel.INFO) -> None:
        frame = inspect.currentframe()
        caller = frame.f_back if frame is not None else None
        while caller is not None and caller.f_code.co_filename == __file__:
            caller = caller.f_back
        where = (
            f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno}] " if caller else ""
        )
        host = _host.maybe_current()
        text = f"{where}{as_text(message)}"
        if host is None:
            print(text, flush=True)
        else:
            host.log(int(level), text)

    @staticmethod
    def log_info(message: str) -> None:
        Logger.log(message, LogLevel.INFO)

    @staticmethod
    def log_warn(message: str) -> None:
        Logger.log(message, LogLevel.WARNING)

    @staticmethod
    def log_error(message: str) -> None:
        Logger.log(message, LogLevel.ERROR)

    @staticmethod
    def log_verbose(message: str) -> None:
        Logger.log(message, LogLevel.VERBOSE)
