"""Log settings, as the logging extension reads and updates them.

The live settings are mutable and owned by the data plane; a request is
answered with a frozen copy (``LogSettingValues``) that each frontend
renders, so no frontend holds the live object.  The trace settings live
with tracing (:mod:`naiad.tracing.settings`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from naiad.core.errors import InvalidArgument, Unavailable, Unsupported

if TYPE_CHECKING:
    from naiad.options.declarations import ServerOptions

LOG_FORMATS = ("default", "ISO8601")


@dataclass(frozen=True, slots=True)
class LogSettingValues:
    """The log settings as a logging request reports them, in Triton's order."""

    log_file: str
    log_info: bool
    log_warning: bool
    log_error: bool
    log_verbose_level: int
    log_format: str


@dataclass
class LogSettings:
    log_file: str = ""
    log_info: bool = True
    log_warning: bool = True
    log_error: bool = True
    log_verbose_level: int = 0
    log_format: str = "default"

    @classmethod
    def from_options(cls, options: ServerOptions) -> LogSettings:
        return cls(
            log_file=options.log_file,
            log_info=options.log_info,
            log_warning=options.log_warning,
            log_error=options.log_error,
            log_verbose_level=options.log_verbose,
            log_format=options.log_format,
        )

    def snapshot(self) -> LogSettingValues:
        return LogSettingValues(**dataclasses.asdict(self))

    def update(self, changes: Mapping[str, Any]) -> None:
        """Apply a partial update (None values ignored).

        Typing rules follow Triton's: booleans for the switches, a
        non-negative integer for the verbose level, "default" or "ISO8601".
        """
        for key, value in changes.items():
            if value is None:
                continue
            if key == "log_file":
                raise Unsupported("log file location can not be updated through network protocol")
            if key in ("log_info", "log_warning", "log_error"):
                if not isinstance(value, bool):
                    raise InvalidArgument(f"expect boolean for '{key}'")
                setattr(self, key, value)
            elif key == "log_verbose_level":
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise InvalidArgument(f"expect unsigned integer for '{key}'")
                self.log_verbose_level = value
            elif key == "log_format":
                if not isinstance(value, str):
                    raise InvalidArgument(f"expect string for '{key}'")
                if value not in LOG_FORMATS:
                    raise Unavailable(f"invalid argument for --log_format, got: {value}")
                self.log_format = value
        self.apply()

    def apply(self) -> None:
        """Make the ``naiad`` logger and its handlers follow the settings, live.

        The logger's level lets through the lowest enabled kind; a filter on
        each handler drops the kinds that are switched off (Triton can turn
        warnings off while keeping info), and Triton-format handlers switch
        between the default and ISO8601 formats.
        """
        from naiad.logs import LevelSwitch, TritonFormatter

        logger = logging.getLogger("naiad")
        if self.log_verbose_level > 0:
            logger.setLevel(logging.DEBUG)
        elif self.log_info:
            logger.setLevel(logging.INFO)
        elif self.log_warning:
            logger.setLevel(logging.WARNING)
        elif self.log_error:
            logger.setLevel(logging.ERROR)
        else:
            logger.setLevel(logging.CRITICAL + 1)
        for handler in logger.handlers:
            for old in [f for f in handler.filters if isinstance(f, LevelSwitch)]:
                handler.removeFilter(old)
            handler.addFilter(
                LevelSwitch(self.log_info, self.log_warning, self.log_error, self.log_verbose_level)
            )
            if isinstance(handler.formatter, TritonFormatter):
                handler.formatter.iso8601 = self.log_format == "ISO8601"
