"""Parsing config.pbtxt: the corpus, syntax variants, errors with file/line/field."""

from __future__ import annotations

from pathlib import Path

import pytest
from _corpus_files import corpus_files

from naiad.config import ConfigError, ModelConfig, parse_config_text, read_model_config
from naiad.core.errors import InvalidArgument, Kind

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.stem)
def test_corpus_parses(path: Path) -> None:
    config = parse_config_text(path.read_text(), str(path))
    assert config.name == path.stem


def test_corpus_covers_every_top_level_field() -> None:
    seen: set[str] = set()
    for path in corpus_files():
        config = parse_config_text(path.read_text(), str(path))
        seen.update(field.name for field, _ in config.ListFields())
    assert seen == {f.name for f in ModelConfig.DESCRIPTOR.fields}


def test_list_syntax_and_repeated_blocks_are_equivalent() -> None:
    listed = parse_config_text(
        'input [ { name: "a" dims: [ 1, 2 ] }, { name: "b" dims: [ 3 ] } ]', "x"
    )
    blocks = parse_config_text(
        'input { name: "a" dims: 1 dims: 2 }\ninput: { name: "b" dims: [3] }', "x"
    )
    assert listed == blocks


@pytest.mark.parametrize("spelling", ["true", "True", "1", "t"])
def test_boolean_spellings(spelling: str) -> None:
    config = parse_config_text(f"response_cache {{ enable: {spelling} }}", "x")
    assert config.response_cache.enable is True


def test_comments_and_omitted_colons() -> None:
    text = '# header\nname: "m" # trailing\ndynamic_batching # no colon\n{\n}\n'
    config = parse_config_text(text, "x")
    assert config.name == "m"
    assert config.HasField("dynamic_batching")


def test_maps_with_integer_keys() -> None:
    config = parse_config_text(
        "dynamic_batching { priority_queue_policy { key: 2 value { max_queue_size: 3 } } }", "x"
    )
    assert config.dynamic_batching.priority_queue_policy[2].max_queue_size == 3


@pytest.mark.parametrize(
    ("text", "line", "field", "fragment"),
    [
        ('name: "m"\nmax_batch_size: 4\nbogus_field: 1\n', 3, "bogus_field", "no field named"),
        ('name: "m"\ninput [\n  {\n    name: "x"\n    data_type: TYPE_FLOAT\n  }\n]\n', 5,
         "data_type", "TYPE_FLOAT"),
        ('name: "m"\ninput [ { name: "x" data_type: TYPE_FOO } ]', 2, "data_type", "TYPE_FOO"),
        ('max_batch_size: "eight"\n', 1, "max_batch_size", "integer"),
        ('name: "m"\ninput { name: "a" dims: [1, 2 }\n', 2, "dims", 'Expected ","'),
        ("dynamic_batching {}\nsequence_batching {}\n", 2, "sequence_batching", "oneof"),
        ('name: "a"\nname: "b"\n', 2, "name", "multiple"),
        ('input [{ name: "a" }, { name: "b" optionl: true }]', 1, "optionl", "no field named"),
        ("response_cache { enable: yes }", 1, "enable", "true"),
    ],
)  # fmt: skip
def test_syntax_errors_name_file_line_and_field(
    text: str, line: int, field: str, fragment: str
) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config_text(text, "/repo/m/config.pbtxt")
    error = info.value
    assert (error.path, error.line, error.field) == ("/repo/m/config.pbtxt", line, field)
    assert fragment in error.detail
    assert str(error).startswith(f"/repo/m/config.pbtxt:{line}: field '{field}': ")
    assert isinstance(error, InvalidArgument) and error.kind is Kind.INVALID_ARG
    assert error.message == str(error)


def test_config_error_format() -> None:
    error = ConfigError("must be >= 0, got -1", path="/repo/m/config.pbtxt", line=7,
                        field="max_batch_size")  # fmt: skip
    assert str(error) == "/repo/m/config.pbtxt:7: field 'max_batch_size': must be >= 0, got -1"
    assert str(ConfigError("bad", path="p")) == "p: bad"
    assert str(ConfigError("bad", field="f")) == "field 'f': bad"


def test_read_model_config(tmp_path: Path) -> None:
    assert read_model_config(tmp_path) is None
    (tmp_path / "config.pbtxt").write_text('name: "main"')
    assert read_model_config(tmp_path).name == "main"
    assert read_model_config(tmp_path, "missing").name == "main"
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "h100.pbtxt").write_text('name: "alt"')
    assert read_model_config(tmp_path, "h100").name == "alt"


def test_read_model_config_errors_name_the_file(tmp_path: Path) -> None:
    (tmp_path / "config.pbtxt").write_bytes(b"name: \xff\xfe")
    with pytest.raises(ConfigError) as info:
        read_model_config(tmp_path)
    assert info.value.path == str(tmp_path / "config.pbtxt")
    (tmp_path / "config.pbtxt").write_text("max_batch_size: -\n")
    with pytest.raises(ConfigError) as info:
        read_model_config(tmp_path)
    assert info.value.path == str(tmp_path / "config.pbtxt")
    assert info.value.line == 1
