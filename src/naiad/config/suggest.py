"""Did you mean ...?" for a misspelt field name or enum value.

protobuf's parsers name the message or enum type and the unknown word
(``Message type "inference.ModelConfig" has no field named
"max_batch_sise"``); the type's own names are the candidates.  Both the
text-format reader (``config.pbtxt``) and the JSON reader (a load request's
``config``) end their errors with the same hint, so ``naiad check`` and the
server's load error say the same thing.
"""

from __future__ import annotations

import difflib
import re

from naiad.config.model_config_pb2 import ModelConfig

_POOL = ModelConfig.DESCRIPTOR.file.pool

_UNKNOWN_FIELD = re.compile(r'Message type "([\w.]+)" has no field named "([^"]+)"')
_UNKNOWN_ENUM = (
    re.compile(r'Enum type "(?P<type>[\w.]+)" has no value named (?P<word>[\w-]+)'),
    re.compile(r"Invalid enum value (?P<word>[\w-]+) for enum type (?P<type>[\w.]+)"),
)


def did_you_mean(message: str) -> str | None:
    """The closest real name to the unknown one a parser error names, if any is close."""
    match = _UNKNOWN_FIELD.search(message)
    if match:
        type_name, word = match.groups()
        try:
            fields = _POOL.FindMessageTypeByName(type_name).fields
        except KeyError:
            return None
        return closest(word, [f.name for f in fields])
    for pattern in _UNKNOWN_ENUM:
        match = pattern.search(message)
        if match:
            try:
                values = _POOL.FindEnumTypeByName(match.group("type")).values
            except KeyError:
                return None
            return closest(match.group("word"), [v.name for v in values])
    return None


def closest(word: str, candidates: list[str]) -> str | None:
    """The candidate most like ``word`` (ignoring case), or None when none is close."""
    by_folded = {c.lower(): c for c in candidates}
    found = difflib.get_close_matches(word.lower(), list(by_folded), n=1, cutoff=0.6)
    return by_folded[found[0]] if found else None


def with_hint(detail: str, message: str | None = None) -> str:
    """``detail`` followed by "; did you mean 'x'?" when ``message`` (else ``detail``) allows."""
    suggestion = did_you_mean(detail if message is None else message)
    return f"{detail}; did you mean '{suggestion}'?" if suggestion else detail
