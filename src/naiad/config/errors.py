"""The one error type of the config package: a bad model configuration.

Users fix config files by hand, so every error says which file, which line
(when known) and which field, in the ``path:line: field 'x': problem`` shape
that editors and terminals turn into links.
"""

from __future__ import annotations

from naiad.core.errors import InvalidArgument


class ConfigError(InvalidArgument):
    """An invalid ``config.pbtxt`` (or JSON override): INVALID_ARG with a location.

    ``detail`` is the bare problem; ``message``/``str()`` add the location.
    """

    def __init__(
        self,
        detail: str,
        *,
        path: str = "",
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.detail = detail
        self.path = path
        self.line = line
        self.field = field
        super().__init__(_format(detail, path, line, field))

    def __reduce__(self) -> tuple[object, ...]:  # keep pickling (worker processes) working
        return (_rebuild, (self.detail, self.path, self.line, self.field))


def _rebuild(detail: str, path: str, line: int | None, field: str | None) -> ConfigError:
    return ConfigError(detail, path=path, line=line, field=field)


def _format(detail: str, path: str, line: int | None, field: str | None) -> str:
    where = path
    if line is not None:
        where = f"{where}:{line}" if where else f"line {line}"
    parts = [where] if where else []
    if field:
        parts.append(f"field '{field}'")
    parts.append(detail)
    return ": ".join(parts)
