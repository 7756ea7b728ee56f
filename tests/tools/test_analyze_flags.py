"""``naiad analyze``'s flags: each lands in the option it means, a flag left out keeps
the option's declared default, and ``--help`` states those defaults."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from naiad.tools.analyze import command
from naiad.tools.analyze.objective import Constraints
from naiad.tools.analyze.options import Asked, Options
from naiad.tools.perf.settings import PerfSettings

pytestmark = pytest.mark.unit


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="naiad analyze")
    command.add_arguments(parser)
    return parser


def parsed(*argv: str) -> Options:
    return command.options_from_args(parser().parse_args(argv))


def test_no_flags_but_the_model_are_the_declared_defaults():
    options = parsed("-m", "mlp")
    assert options == Options(model="mlp")
    assert options.out_dir == Path("reports") and options.repeats == 2
    assert options.sweep == PerfSettings(model="mlp", concurrency=[1, 8, 32],
                                         measurement_interval_ms=1000, max_trials=5)  # fmt: skip


def test_a_full_command_line():
    options = parsed(
        "--model-name", "mlp", "--model-repository", "models", "--url", "127.0.0.1:8000",
        "--server-pid", "42", "--protocol", "grpc", "--latency-budget", "2.5",
        "--min-throughput", "100", "--search", "brute", "--instances", "2,1,2",
        "--dynamic-batching", "off,on", "--max-batch-sizes", "8", "--delays-us", "0,50",
        "--intra-op-threads", "1", "--inter-op-threads", "0,2", "--concurrency", "4,2",
        "-p", "300", "--max-trials", "4", "-s", "20", "--repeats", "3", "-b", "2",
        "--shape", "x:3,4", "--startup-timeout", "9.5", "-o", "out",
    )  # fmt: skip
    assert options == Options(
        model="mlp", repository=Path("models"), url="127.0.0.1:8000", server_pid=42,
        protocol="grpc", constraints=Constraints(latency_budget_us=2500.0, min_throughput=100.0),
        search="brute",
        asked=Asked(instances=(1, 2), dynamic_batching=(False, True), max_batch_sizes=(8,),
                    delays_us=(0, 50), intra_op_threads=(1,), inter_op_threads=(0, 2)),
        concurrency=(2, 4), measurement_interval_ms=300, max_trials=4, stability_percentage=20.0,
        repeats=3, batch_size=2, shapes={"x": [3, 4]}, startup_timeout_s=9.5,
        out_dir=Path("out"),
    )  # fmt: skip
    assert options.sweep == PerfSettings(
        model="mlp", protocol="grpc", concurrency=[2, 4], measurement_interval_ms=300,
        max_trials=4, stability_percentage=20.0, batch_size=2, shapes={"x": [3, 4]},
    )  # fmt: skip


def test_one_constraint_alone():
    assert parsed("-m", "m", "--min-throughput", "5").constraints == Constraints(None, 5.0)


def test_help_states_the_declared_defaults():
    text = " ".join(parser().format_help().split())
    for said in ("(default http)", "(default 1,8,32)", "(default 1000)", "(default 5;",
                 "(default 10)", "(default 2)", "(default 1)", "(default 120)",
                 "(default reports)", "(default 4,16,64)", "(default 0,100,1000)"):  # fmt: skip
        assert said in text


@pytest.mark.parametrize("argv", [["--instances", "0"], ["--dynamic-batching", "maybe"],
                                  ["-s", "-1"], ["--delays-us", "x"]])  # fmt: skip
def test_a_bad_value_is_a_usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exited:
        parsed("-m", "m", *argv)
    assert exited.value.code == 2
    assert "expected" in capsys.readouterr().err
