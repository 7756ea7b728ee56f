"""How a field of :class:`~naiad.options.declarations.ServerOptions` declares its option.

:func:`option` makes a dataclass field that carries, in its metadata, the
:class:`Option`: the ``naiad serve`` flag, its help, its area of ``--help``
and of the README's table, and how its value reads.  :func:`no_flag` marks a
field that only the embedded API sets.  :mod:`naiad.options.flags` reads the
fields back with :func:`declared` to build the command line.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from naiad.options.values import Reader

T = TypeVar("T")

#: The areas of ``naiad serve --help`` and of the README's options table, in that
#: order, with what ``--help`` says of each.
GROUPS: dict[str, str] = {
    "frontends": "where the server listens, and with which protocols and certificates",
    "HTTP limits": "what one HTTP client may cost the server (naiad's; defaults after "
    "nginx and Node; docs/security.md)",
    "gRPC limits": "what one gRPC client may make the server hold (naiad's; docs/security.md)",
    "models": "which models are served, and how their configurations are read",
    "scheduling": "when requests execute: rate limiting, the response cache, admission",
    "operations": "start-up, readiness, shutdown and what clients may use",
    "observability": "logs, metrics and traces",
}
FRONTENDS, HTTP_LIMITS, GRPC_LIMITS, MODELS, SCHEDULING, OPERATIONS, OBSERVABILITY = GROUPS

_OPTION = "naiad.option"
_NO_FLAG = "naiad.no_flag"


@dataclass(frozen=True)
class Older:
    """A deprecated spelling that Triton still accepts; its option's reader folds it in."""

    flag: str
    help: str
    #: str, int or bool (a switch); the value is None (or [] when repeated) if absent.
    kind: type = str
    repeat: bool = False
    metavar: str | None = None


@dataclass(frozen=True)
class Option:
    """How one :class:`ServerOptions` field is set on the command line and documented.

    The field's annotation says how a value reads (a bool is a switch, a tuple or
    a dict a repeatable flag); ``value`` and ``read`` are for Triton's syntaxes that
    say more (see :mod:`naiad.options.values`).
    """

    flag: str
    group: str
    help: str
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    #: Checks one value as argparse reads it, where the field's type is not enough.
    value: Callable[[str], object] | None = None
    #: The field's value from this flag's value and every flag's value by name.
    read: Reader | None = None
    older: tuple[Older, ...] = ()
    #: The default as ``--help`` shows it, where the field's default does not say it.
    shown: str | None = None


def option(
    default: T,
    flag: str,
    group: str,
    help: str,
    *,
    metavar: str | None = None,
    choices: tuple[str, ...] = (),
    aliases: tuple[str, ...] = (),
    value: Callable[[str], object] | None = None,
    read: Reader | None = None,
    older: tuple[Older, ...] = (),
    shown: str | None = None,
) -> T:
    """A :class:`ServerOptions` field with its flag, help and area."""
    assert group in GROUPS, f"{flag}: unknown group {group!r}"
    spec = Option(flag, group, help, metavar, choices, aliases, value, read, older, shown)
    metadata = {_OPTION: spec}
    if isinstance(default, dict):  # a fresh dict per ServerOptions, never a shared one
        return field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def no_flag(default: T, why: str) -> T:
    """A field the embedded API sets but no flag does; ``why`` says so, for the tests."""
    metadata = {_NO_FLAG: why}
    if isinstance(default, dict):
        return field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def declared(f: dataclasses.Field[Any]) -> Option | None:
    """The option a field declares, or None for a :func:`no_flag` field."""
    spec: Option | None = f.metadata.get(_OPTION)
    return spec


def why_no_flag(f: dataclasses.Field[Any]) -> str | None:
    """Why no flag sets a :func:`no_flag` field; None for a declared option."""
    why: str | None = f.metadata.get(_NO_FLAG)
    return why
