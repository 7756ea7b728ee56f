"""Reading ``config.pbtxt``: protobuf text format, errors with file and line.

protobuf's own text parser is what Triton uses, so every spelling Triton
accepts (list syntax, repeated blocks, ``True``/``1`` booleans, omitted
colons before braces, ``#`` comments) is accepted here, and a typo is
reported with the line and column protobuf found it at.
"""

from __future__ import annotations

import re
from pathlib import Path

from google.protobuf import text_format

from naiad.config.errors import ConfigError
from naiad.config.model_config_pb2 import ModelConfig
from naiad.config.suggest import with_hint

CONFIG_FILENAME = "config.pbtxt"

# "2:1 : 'line text': problem" -> problem (the quoted line is noise once we report the line)
_POSITION = re.compile(r"^\d+:\d+\s*:\s*")
_FIELD_IN_MESSAGE = (
    re.compile(r'has no field named "([^"]+)"'),
    re.compile(r'should not have multiple "([^"]+)" fields'),
    re.compile(r'^Field "([^"]+)" is specified along with'),
    re.compile(r"for field ([A-Za-z_]\w*)"),
)
_KEY_BEFORE = re.compile(r"([A-Za-z_]\w*)\s*:?\s*(?:\[[^\[\]{}:]*)?$")


def parse_config_text(text: str, path: str = "") -> ModelConfig:
    """Parse protobuf text into a :class:`ModelConfig`; syntax errors become ConfigError."""
    config = ModelConfig()
    try:
        text_format.Parse(text, config)
    except text_format.ParseError as exc:
        raise _config_error(exc, text, path) from None
    return config


def read_model_config(model_dir: Path, config_name: str | None = None) -> ModelConfig | None:
    """Read a model directory's config file; None when it has none.

    ``config_name`` (``--model-config-name``) selects ``configs/<name>.pbtxt``
    when that file exists, else the usual ``config.pbtxt`` is used.
    """
    model_dir = Path(model_dir)
    candidates = []
    if config_name:
        candidates.append(model_dir / "configs" / f"{config_name}.pbtxt")
    candidates.append(model_dir / CONFIG_FILENAME)
    for candidate in candidates:
        if not candidate.is_file():
            continue
        try:
            text = candidate.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"cannot read model configuration: {exc}", path=str(candidate)
            ) from None
        return parse_config_text(text, str(candidate))
    return None


def _config_error(exc: text_format.ParseError, text: str, path: str) -> ConfigError:
    message = _POSITION.sub("", str(exc))
    line_no = exc.GetLine()
    column = exc.GetColumn()
    if line_no is not None:
        # protobuf quotes the offending line before the problem; drop it.
        lines = text.splitlines()
        if 1 <= line_no <= len(lines):
            quoted = f"'{lines[line_no - 1]}': "
            if message.startswith(quoted):
                message = message[len(quoted) :]
    field = _field_from_message(message)
    if field is None and line_no is not None and column is not None:
        field = _field_before(text, line_no, column)
    return ConfigError(with_hint(message.rstrip(".")), path=path, line=line_no, field=field)


def _field_from_message(message: str) -> str | None:
    for pattern in _FIELD_IN_MESSAGE:
        match = pattern.search(message)
        if match:
            return match.group(1)
    return None


def _field_before(text: str, line_no: int, column: int) -> str | None:
    """The field name written just before the error position (value errors)."""
    lines = text.splitlines()
    if not 1 <= line_no <= len(lines):
        return None
    before = "\n".join(
        lines[max(0, line_no - 3) : line_no - 1] + [lines[line_no - 1][: column - 1]]
    )
    before = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', before)  # string contents are not fields
    match = _KEY_BEFORE.search(before.rstrip())
    if match:
        return match.group(1)
    names = re.findall(r"([A-Za-z_]\w*)\s*:", before)
    return names[-1] if names else None
