"""Each server option is declared once, and everything that shows an option agrees with it.

``ServerOptions``' fields carry their flag, help and area; ``naiad serve
--help``, the defaults the flags take and the README's options table are
checked against those declarations here, so a new option that lacks one of
them fails with a message naming it.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from naiad.cli import build_parser
from naiad.options.declarations import ServerOptions, options_by_flag
from naiad.options.fields import GROUPS, declared, why_no_flag
from naiad.options.flags import options_from_args, serve_parser, shown_default
from naiad.options.triton_flags import GROUP as WITHOUT_EFFECT_GROUP
from naiad.options.triton_flags import WITHOUT_EFFECT
from naiad.options.values import DEFAULT_REPOSITORY

pytestmark = pytest.mark.unit

README = Path(__file__).resolve().parents[2] / "README.md"
OPTIONS = list(options_by_flag().values())
#: ``--help``'s and the README's areas: the options', then Triton's flags without effect.
AREAS = [*GROUPS, WITHOUT_EFFECT_GROUP]


def test_every_field_is_an_option_or_says_why_not() -> None:
    for f in dataclasses.fields(ServerOptions):
        assert declared(f) is not None or why_no_flag(f), (
            f"ServerOptions.{f.name} has no flag: declare it with option(...), or with "
            "no_flag(default, why=...) if no flag should set it"
        )


@pytest.mark.parametrize("spec", [s for _, s in OPTIONS], ids=lambda s: s.flag)
def test_every_option_has_help_and_a_known_group(spec) -> None:
    assert spec.flag.startswith("--")
    assert spec.help.strip(), f"{spec.flag} has no help text"
    assert spec.group in GROUPS, f"{spec.flag}: group {spec.group!r} is none of {list(GROUPS)}"
    for older in spec.older:
        assert older.help.startswith("deprecated:"), older.flag


def test_no_flag_is_declared_twice() -> None:
    spellings = [
        name
        for _, spec in OPTIONS
        for name in (spec.flag, *spec.aliases, *(o.flag for o in spec.older))
    ]
    assert len(spellings) == len(set(spellings)), sorted(
        {s for s in spellings if spellings.count(s) > 1}
    )


def test_the_flags_default_to_the_embedded_api_defaults() -> None:
    """No flag writes a default of its own: without flags, the CLI's options are the
    dataclass defaults (but for the repository it serves when none is given)."""
    from_flags = options_from_args(serve_parser().parse_args([]))
    assert from_flags.model_repositories == (DEFAULT_REPOSITORY,)
    assert dataclasses.replace(from_flags, model_repositories=()) == ServerOptions()


def _help_entries(monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[str, str]]:
    """``naiad serve --help`` as {flag: (group title, whole entry text)}."""
    monkeypatch.setenv("COLUMNS", "1000")  # one line per help text: nothing wrapped
    serve = build_parser()._subparsers._group_actions[0].choices["serve"]  # type: ignore[union-attr]
    entries: dict[str, tuple[str, str]] = {}
    group = flag = ""
    for line in serve.format_help().splitlines():
        if line and not line.startswith(" "):
            group, flag = line.rstrip(":"), ""
        elif match := re.match(r"  (--[\w-]+)", line):
            flag = match.group(1)
            entries[flag] = (group, line.strip())
        elif flag and line.startswith("   "):
            entries[flag] = (group, f"{entries[flag][1]} {line.strip()}")
        else:
            flag = ""
    return entries


def test_serve_help_shows_every_option_with_its_default_in_its_area(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entries = _help_entries(monkeypatch)
    for f, spec in OPTIONS:
        assert spec.flag in entries, f"naiad serve --help does not list {spec.flag}"
        group, text = entries[spec.flag]
        assert group == spec.group, f"{spec.flag} is under {group!r}, declared in {spec.group!r}"
        assert " ".join(spec.help.split()) in text, f"{spec.flag}: its help is not in: {text}"
        assert text.endswith(f"(default: {shown_default(f, spec)})"), (
            f"{spec.flag}: no default shown in: {text}"
        )
        for older in spec.older:
            assert entries[older.flag][0] == spec.group, older.flag


def test_serve_help_shows_the_areas_in_the_readme_order(monkeypatch: pytest.MonkeyPatch) -> None:
    groups = [group for group, _ in _help_entries(monkeypatch).values()]
    seen = list(dict.fromkeys(groups))
    assert seen == AREAS


def test_serve_help_shows_why_each_triton_flag_has_no_effect(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entries = _help_entries(monkeypatch)
    for spec in WITHOUT_EFFECT:
        group, text = entries[spec.flag]
        assert group == WITHOUT_EFFECT_GROUP, spec.flag
        assert " ".join(spec.why.split()) in text, f"{spec.flag}: its reason is not in: {text}"


def _readme_table() -> dict[str, set[str]]:
    """The README's options table as {area: flags named in its row}."""
    text = README.read_text()
    start = text.index("| area | options |")
    rows = text[start:].split("\n\n", 1)[0].splitlines()[2:]
    table: dict[str, set[str]] = {}
    for row in rows:
        area, options = (cell.strip() for cell in row.strip("|").split(" | ", 1))
        table[area.split(" (", 1)[0]] = set(re.findall(r"`(--[\w-]+)", options))
    return table


def test_the_readme_table_lists_every_option_in_its_area() -> None:
    table = _readme_table()
    assert list(table) == AREAS, "README.md's options table: areas differ from GROUPS"
    missing = [
        f"{spec.flag} (add it to the '{spec.group}' row)"
        for _, spec in OPTIONS
        if spec.flag not in table[spec.group]
    ] + [
        f"{spec.flag} (add it to the '{WITHOUT_EFFECT_GROUP}' row)"
        for spec in WITHOUT_EFFECT
        if spec.flag not in table[WITHOUT_EFFECT_GROUP]
    ]
    assert not missing, "README.md's options table lacks: " + ", ".join(missing)


def test_the_readme_table_names_no_other_flag() -> None:
    declared_flags = {spec.flag: spec.group for _, spec in OPTIONS}
    declared_flags.update((spec.flag, WITHOUT_EFFECT_GROUP) for spec in WITHOUT_EFFECT)
    stray = [
        f"{flag} (in '{area}'"
        + (f", declared in '{declared_flags[flag]}')" if flag in declared_flags else ", unknown)")
        for area, flags in _readme_table().items()
        for flag in sorted(flags)
        if declared_flags.get(flag) != area
    ]
    assert not stray, "README.md's options table names: " + ", ".join(stray)
