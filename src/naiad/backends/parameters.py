"""A model's ``parameters`` as the framework backends read them: typed, checked once.

Triton's backends each parse their keys their own way and mostly fall back
to a default on a value they cannot read; naiad refuses it at load, with the
parameter's name and what it accepts, in one wording for every backend.
Reading needs no framework, so ``naiad check`` (through ``validate``) and
auto-complete use it as the instances do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from naiad.core.errors import InvalidArgument

if TYPE_CHECKING:
    from naiad.config import ModelConfig

_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


class ModelParameters:
    """The config's ``parameters { key: ... value: { string_value: ... } }``, stripped.

    An empty value counts as absent, as in Triton's backends.
    """

    def __init__(self, config: ModelConfig) -> None:
        self.model = config.name
        self.values = {key: value.string_value.strip() for key, value in config.parameters.items()}

    def __contains__(self, key: str) -> bool:
        return bool(self.values.get(key))

    def get(self, key: str, default: str = "") -> str:
        return self.values.get(key) or default

    def invalid(self, key: str, expected: str) -> InvalidArgument:
        return InvalidArgument(
            f"model '{self.model}': parameter '{key}' must be {expected}, "
            f"got '{self.values.get(key, '')}'"
        )

    def flag(self, key: str) -> bool | None:
        """True or false (yes/no, on/off, 1/0, any case); None when absent."""
        if key not in self:
            return None
        value = self.values[key].lower()
        if value in _TRUE or value in _FALSE:
            return value in _TRUE
        raise self.invalid(key, "true or false (yes/no, on/off, 1/0)")

    def count(self, key: str) -> int | None:
        """A whole number, 0 or more; None when absent."""
        if key not in self:
            return None
        value = self.values[key]
        if not value.isdigit():
            raise self.invalid(key, "a whole number (0 or more)")
        return int(value)

    def integer(self, key: str) -> int | None:
        """Any integer (Triton's -1 often means "the default"); None when absent."""
        if key not in self:
            return None
        try:
            return int(self.values[key])
        except ValueError:
            raise self.invalid(key, "an integer") from None

    def number(self, key: str) -> float | None:
        if key not in self:
            return None
        try:
            return float(self.values[key])
        except ValueError:
            raise self.invalid(key, "a number") from None

    def choice(self, key: str, allowed: tuple[str, ...]) -> str | None:
        """One of ``allowed`` (upper-case names, any case given); None when absent."""
        if key not in self:
            return None
        value = self.values[key].upper()
        if value not in allowed:
            raise self.invalid(key, "one of " + "/".join(allowed))
        return value
