"""Find the line of a field path (``input[1].dims``) in a config's text.

Validation works on the parsed message, which has no line numbers, so an
error's line is recovered by reading the text again with a small, tolerant
protobuf-text reader: both ``input [ {..}, {..} ]`` and repeated
``input {..}`` blocks count as elements, map entries are found by key
(``parameters["k"]``, ``priority_queue_policy[3]``).  Best effort: a path
that cannot be followed to the end yields the line of its deepest match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(
    r"""(?P<space>[ \t\r\f\v]+)|(?P<newline>\n)|(?P<comment>\#[^\n]*)
      |(?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
      |(?P<punct>[{}\[\]<>:,;])|(?P<word>[^\s{}\[\]<>:,;"'\#]+)""",
    re.VERBOSE,
)
_STEP = re.compile(r'([A-Za-z_]\w*)(?:\[(?:"((?:[^"\\]|\\.)*)"|(-?\d+))\])?')


@dataclass
class _Entry:
    """One value of a field: ``key_line`` has the name, ``line`` the value."""

    name: str
    key_line: int
    line: int
    value: str | None = None  # scalar token (strings unquoted)
    children: list[_Entry] = field(default_factory=list)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    line = 1
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or ""
        if kind == "newline":
            line += 1
        elif kind in ("string", "punct", "word"):
            out.append((kind, match.group(), line))
    return out


class _Reader:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def message(self, closing: str | None) -> list[_Entry]:
        entries: list[_Entry] = []
        while (token := self.peek()) is not None:
            kind, text, line = token
            if kind == "punct" and text == closing:
                self.pos += 1
                return entries
            if kind != "word":
                self.pos += 1  # stray separator or unexpected token: skip
                continue
            self.pos += 1
            entries.extend(self.values(text, line))
        return entries

    def values(self, name: str, key_line: int) -> list[_Entry]:
        token = self.peek()
        if token is not None and token[1] == ":":
            self.pos += 1
            token = self.peek()
        if token is None:
            return []
        if token[1] == "[":
            self.pos += 1
            items: list[_Entry] = []
            while (token := self.peek()) is not None and token[1] != "]":
                if token[1] == ",":
                    self.pos += 1
                    continue
                items.append(self.single(name, key_line))
            self.pos += 1
            return items
        return [self.single(name, key_line)]

    def single(self, name: str, key_line: int) -> _Entry:
        kind, text, line = self.tokens[self.pos]
        self.pos += 1
        if text in ("{", "<"):
            closing = "}" if text == "{" else ">"
            return _Entry(name, key_line, line, children=self.message(closing))
        value = text
        if text == "-" and self.peek() is not None:  # "- 1"
            value += self.tokens[self.pos][1]
            self.pos += 1
        while kind == "string" and (nxt := self.peek()) is not None and nxt[0] == "string":
            value += nxt[1]  # adjacent string literals concatenate
            self.pos += 1
        if kind == "string":
            value = value[1:-1] if len(value) >= 2 else value
        return _Entry(name, key_line, line, value=value)


def locate(text: str, path: str) -> int | None:
    """The 1-based line of ``path`` in ``text``; None if not even its first step is there."""
    if not path:
        return None
    entries = _Reader(text).message(None)
    best: int | None = None
    for step in path.split("."):
        match = _STEP.fullmatch(step)
        if match is None:
            return best
        name, key, index = match.groups()
        found = [e for e in entries if e.name == name]
        if not found:
            return best
        if key is not None or index is not None:
            chosen = _select(found, key, index)
            if chosen is None:
                return found[0].key_line if best is None else max(best, found[0].key_line)
            best, entries = chosen.line, chosen.children
            if _is_map_entry(chosen):
                best = next(c.line for c in chosen.children if c.name == "key")
                entries = _map_value_children(chosen)
        else:
            best, entries = found[0].key_line, found[0].children
    return best


def _is_map_entry(entry: _Entry) -> bool:
    return any(c.name == "key" for c in entry.children)


def _map_value_children(entry: _Entry) -> list[_Entry]:
    for child in entry.children:
        if child.name == "value":
            return child.children
    return []


def _select(found: list[_Entry], key: str | None, index: str | None) -> _Entry | None:
    """A list element by position, or a map entry by its key (string or integer)."""
    if any(_is_map_entry(e) for e in found):
        wanted = key if key is not None else index
        for entry in found:
            keys = [c.value for c in entry.children if c.name == "key"]
            if keys and keys[0] == wanted:
                return entry
        return None
    if index is None:
        return None
    position = int(index)
    return found[position] if 0 <= position < len(found) else None
