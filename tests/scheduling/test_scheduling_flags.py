"""The scheduling flags of ``naiad serve`` reach the server options."""

from __future__ import annotations

import pytest

from naiad.options.flags import options_from_args, serve_parser

pytestmark = pytest.mark.unit


def _options(*flags: str):
    return options_from_args(serve_parser().parse_args(flags))


def test_scheduling_flags():
    options = _options(
        "--rate-limit", "execution_count",
        "--rate-limit-resource", "R:2",
        "--rate-limit-resource", "G:1:0",
        "--cache-config", "local,size=1048576",
        "--max-queued-requests", "100",
    )  # fmt: skip
    assert options.rate_limit == "execution_count"
    assert options.rate_limit_resources == ("R:2", "G:1:0")
    assert options.cache_config == {"local": {"size": "1048576"}}
    assert options.max_queued_requests == 100
    assert _options("--response-cache-byte-size", "4096").cache_config == {
        "local": {"size": "4096"}
    }
    defaults = _options()
    assert (defaults.rate_limit, defaults.cache_config, defaults.max_queued_requests) == (
        "off",
        {},
        0,
    )


def test_a_bad_resource_is_refused(capsys):
    with pytest.raises(SystemExit):
        _options("--rate-limit-resource", "R")
    assert "expected <name>:<count>[:<device>]" in capsys.readouterr().err
