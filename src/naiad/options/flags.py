"""``naiad serve``'s flags, made from the option declarations in :mod:`naiad.options.declarations`.

The ``naiad`` command and the runner's ``cli_args`` both parse with the
arguments made here, and both turn what was parsed into a
:class:`ServerOptions` with :func:`options_from_args`, so a flag means the
same in both.  It lives at the engine layer, beside the declarations, so
that the runner (which sits below the command line) needs nothing of it.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import typing
from collections.abc import Iterator
from typing import Any

from naiad.options import triton_flags
from naiad.options.declarations import ServerOptions, default_of, options_by_flag
from naiad.options.fields import GROUPS, Older, Option, declared
from naiad.options.values import boolean


def add_serve_flags(parser: argparse.ArgumentParser) -> None:
    """Every option's flag, with its deprecated spellings, in one argument group per
    area, in the order of the README's options table; then Triton's flags that naiad
    accepts without effect."""
    groups = {name: parser.add_argument_group(name, about) for name, about in GROUPS.items()}
    for f, spec in options_by_flag().values():
        group = groups[spec.group]
        _add(group, f, spec)
        for older in spec.older:
            _add_older(group, older)
    triton_flags.add_flags(parser)


def add_flag(parser: argparse.ArgumentParser, name: str) -> None:
    """The flag of the option ``name`` alone (``naiad check`` shares one with serve)."""
    f = ServerOptions.__dataclass_fields__[name]
    spec = declared(f)
    assert spec is not None, f"{name} has no flag"
    _add(parser, f, spec)


def serve_parser(
    parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser,
) -> argparse.ArgumentParser:
    """A parser of ``naiad serve``'s flags alone; ``parser_class`` decides what an
    error does (the runner's raises instead of exiting)."""
    parser = parser_class(prog="naiad serve")
    add_serve_flags(parser)
    return parser


def options_from_args(args: argparse.Namespace) -> ServerOptions:
    """The options that parsed flags set; a value argparse could not check (a
    ``--backend-config`` without ``=``) raises :class:`SystemExit` with a ``naiad:`` line."""
    given = {flag: getattr(args, _dest(flag)) for flag in _flags()}
    settings: dict[str, Any] = {}
    for f, spec in options_by_flag().values():
        own = given[spec.flag]
        if spec.read is not None:
            settings[f.name] = spec.read(own, given)
        else:
            settings[f.name] = tuple(own) if isinstance(own, list) else own
    return ServerOptions(**settings, triton_flags_without_effect=triton_flags.given(args))


def shown_default(f: dataclasses.Field[Any], spec: Option) -> str:
    """An option's default as ``--help`` (and the tests) show it."""
    if spec.shown is not None:
        return spec.shown
    default = default_of(f.name)
    if isinstance(default, bool):
        return "true" if default else "false"
    if default is None or default in ("", (), {}):
        return "none"
    if isinstance(default, float):
        return f"{default:g}"
    return str(default)


# -- how a declaration becomes an argparse argument -------------------------------------


@functools.cache
def _hints() -> dict[str, Any]:
    return typing.get_type_hints(ServerOptions)


def _add(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    f: dataclasses.Field[Any],
    spec: Option,
) -> None:
    """The field's annotation says how its flag reads: a bool is a switch, a tuple or
    a dict a repeatable flag, an int or a float that type, a str (or None) text."""
    hint, default = _hints()[f.name], default_of(f.name)
    how: dict[str, Any] = {
        "dest": _dest(spec.flag),
        "metavar": spec.metavar,
        "help": f"{spec.help} (default: {shown_default(f, spec)})".replace("%", "%%"),
    }
    if spec.choices:
        how["choices"] = spec.choices
    if hint is bool:
        how.update(type=boolean, nargs="?", const=True, default=default)
        how["metavar"] = spec.metavar or "BOOL"
    elif typing.get_origin(hint) in (tuple, dict):
        how.update(action="append", default=[], type=spec.value)
    elif hint in (int, float, str, str | None):
        how.update(type=spec.value or (hint if hint in (int, float) else None), default=default)
    else:
        raise TypeError(f"{f.name}: no flag syntax for {hint}; declare a value= or read=")
    parser.add_argument(spec.flag, *spec.aliases, **how)


def _add_older(parser: argparse._ArgumentGroup, older: Older) -> None:
    how: dict[str, Any] = {
        "dest": _dest(older.flag),
        "metavar": older.metavar,
        "help": older.help.replace("%", "%%"),
    }
    if older.kind is bool:
        how.update(type=boolean, nargs="?", const=True, default=None)
        how["metavar"] = older.metavar or "BOOL"
    elif older.repeat:
        how.update(action="append", default=[])
    else:
        how.update(type=None if older.kind is str else older.kind, default=None)
    parser.add_argument(older.flag, **how)


def _flags() -> Iterator[str]:
    for _, spec in options_by_flag().values():
        yield spec.flag
        yield from (older.flag for older in spec.older)


def _dest(flag: str) -> str:
    """argparse's attribute for a flag (``--http-port``: ``http_port``), named here so
    that reading it back cannot disagree with argparse."""
    return flag.lstrip("-").replace("-", "_")
