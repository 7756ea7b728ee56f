"""A tool's flags declared on the fields of its settings dataclass, once.

As :mod:`naiad.options.declarations` does for the server: a field made with
:func:`flag` carries the command-line argument(s) that set it, and both the
argparse arguments (:func:`add_flags`) and the settings a parsed command line
means (:func:`settings_from`) are made from those declarations.  A field
whose flags are all absent keeps the dataclass's default, so no default is
written twice.  Kept apart from the server's machinery: perf_analyzer's flags
have short names, several flags may make one value, and ``--help`` shows no
defaults.  Imported at start-up: argparse and dataclasses only.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_FLAGS = "naiad.tools.flags"

#: A field's value from its first flag's value and every flag's value by ``dest``
#: (None where a flag is absent); called only when one of the field's flags is given.
Reader = Callable[[Any, Mapping[str, Any]], object]


@dataclass(frozen=True)
class Arg:
    """One command-line argument; what argparse is told of it."""

    names: tuple[str, ...]
    help: str | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    type: Callable[[str], Any] | None = None
    #: A switch: given or not (argparse's store_true).
    switch: bool = False
    #: Repeatable: every value, in order (argparse's append).
    repeat: bool = False
    required: bool = False
    #: argparse's attribute; the field's name for a field's only flag.
    dest: str | None = None
    #: The ``--help`` section it is listed in (a field's other flags: its first's).
    group: str | None = None


@dataclass(frozen=True)
class Flags:
    args: tuple[Arg, ...]
    read: Reader | None


def flag(
    *names: str,
    help: str | None = None,
    metavar: str | None = None,
    choices: tuple[str, ...] | None = None,
    type: Callable[[str], Any] | None = None,
    switch: bool = False,
    repeat: bool = False,
    required: bool = False,
    dest: str | None = None,
    group: str | None = None,
    more: tuple[Arg, ...] = (),
    read: Reader | None = None,
    default: Any = dataclasses.MISSING,
    default_factory: Any = dataclasses.MISSING,
) -> Any:
    """A dataclass field set by the flag ``names`` (and the flags in ``more``); ``read``
    turns what was given into the field's value (default: the first flag's value).
    ``{default}`` in ``help`` is the field's default."""
    first = Arg(names, help, metavar, choices, type, switch, repeat, required, dest, group)
    metadata = {_FLAGS: Flags((first, *more), read)}
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def add_flags(parser: argparse.ArgumentParser, settings: type) -> None:
    """Every declared flag of ``settings``, in the order of its fields, each in its
    group (groups listed in the order they first appear)."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for f, flags in _declared(settings):
        for arg in flags.args:
            title = arg.group or flags.args[0].group
            where: argparse.ArgumentParser | argparse._ArgumentGroup = parser
            if title is not None:
                where = groups.get(title) or groups.setdefault(
                    title, parser.add_argument_group(title)
                )
            text = arg.help
            if text is not None and "{default}" in text:
                text = text.replace("{default}", _shown(f))
            how: dict[str, Any] = {"dest": _dest(f, flags, arg), "help": text}
            if arg.switch:
                how.update(action="store_const", const=True, default=None)
            else:
                how.update(metavar=arg.metavar, choices=arg.choices, type=arg.type)
                if arg.repeat:
                    how.update(action="append", default=None)
                else:
                    how.update(required=arg.required, default=None)
            where.add_argument(*arg.names, **how)


def settings_from(args: argparse.Namespace, settings: type) -> dict[str, Any]:
    """The fields that the parsed ``args`` set, by name (absent flags set none)."""
    given = vars(args)
    found: dict[str, Any] = {}
    for f, flags in _declared(settings):
        values = [given[_dest(f, flags, arg)] for arg in flags.args]
        if all(value is None for value in values):
            continue
        found[f.name] = values[0] if flags.read is None else flags.read(values[0], given)
    return found


def flag_name(settings: type, name: str) -> str:
    """The flag that sets field ``name`` of ``settings``, as messages name it."""
    for f, flags in _declared(settings):
        if f.name == name:
            return flags.args[0].names[0]
    raise KeyError(name)


def _declared(settings: type) -> list[tuple[dataclasses.Field[Any], Flags]]:
    return [(f, f.metadata[_FLAGS]) for f in dataclasses.fields(settings) if _FLAGS in f.metadata]


def _shown(f: dataclasses.Field[Any]) -> str:
    """A field's default as ``--help`` says it (a tuple as perf_analyzer writes a list)."""
    default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    if isinstance(default, tuple):
        return ",".join(str(v) for v in default)
    if isinstance(default, float):
        return f"{default:g}"
    return str(default)


def _dest(f: dataclasses.Field[Any], flags: Flags, arg: Arg) -> str:
    if arg.dest is not None:
        return arg.dest
    if arg is flags.args[0]:
        return f.name
    return max(arg.names, key=len).lstrip("-").replace("-", "_")
