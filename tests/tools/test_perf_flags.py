"""``naiad perf``'s flags: every perf_analyzer flag it takes lands in the settings it
means, and a flag left out leaves the settings' own default."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from naiad.tools.perf import command
from naiad.tools.perf.settings import PerfError, PerfSettings

pytestmark = pytest.mark.unit


def parsed(*argv: str) -> PerfSettings:
    parser = argparse.ArgumentParser(prog="naiad perf")
    command.add_arguments(parser)
    return command.settings_from_args(parser.parse_args(argv))


def test_no_flags_but_the_model_are_the_settings_defaults():
    assert parsed("-m", "add_sub") == PerfSettings(model="add_sub")


def test_a_full_http_command_line(tmp_path: Path):
    intervals = tmp_path / "intervals.txt"
    intervals.write_text("100\n250.5\n")
    settings = parsed(
        "-m", "add_sub", "-x", "2", "-u", "https://127.0.0.1:9000", "-i", "HTTP", "-b", "4",
        "--concurrency-range", "2:8:3", "--request-rate-range", "10:30:10",
        "--request-intervals", str(intervals), "--request-distribution", "poisson",
        "--shape", "INPUT0:4,2", "--shape", "INPUT1:3", "--input-data", "zero",
        "--string-length", "7", "--string-data", "abc", "-p", "300",
        "--measurement-mode", "count_windows", "--measurement-request-count", "90",
        "-s", "12.5", "-r", "2", "--percentile", "95", "--sequence-length", "6",
        "--sequence-id-range", "5:9", "--shared-memory", "system",
        "--output-shared-memory-size", "4096", "-H", "a: 1", "-H", "b:two",
        "--ssl-https-verify-peer", "0", "--ssl-https-ca-certificates-file", "ca.pem",
        "--ssl-https-client-certificate-file", "cert.pem",
        "--ssl-https-private-key-file", "key.pem", "-f", "out.csv", "--verbose-csv",
        "--collect-metrics", "--metrics-url", "127.0.0.1:9002/metrics",
        "--metrics-interval", "250", "--plot", "out.png", "--client-processes", "3",
    )  # fmt: skip
    assert settings == PerfSettings(
        model="add_sub", version="2", url="https://127.0.0.1:9000", protocol="http",
        batch_size=4, concurrency=[2, 5, 8], request_rates=[10.0, 20.0, 30.0],
        request_intervals_us=[100.0, 250.5], request_distribution="poisson",
        shapes={"INPUT0": [4, 2], "INPUT1": [3]}, input_data="zero", string_length=7,
        string_data="abc", measurement_interval_ms=300, measurement_mode="count_windows",
        measurement_request_count=90, stability_percentage=12.5,
        max_trials=3,  # perf_analyzer needs three windows to compare
        percentile=95, sequence_length=6, sequence_id_range=(5, 9),
        shared_memory="system", output_shared_memory_size=4096,
        headers={"a": "1", "b": "two"},
        ssl={"ca": "ca.pem", "cert": "cert.pem", "key": "key.pem", "verify_peer": "0"},
        csv="out.csv", verbose_csv=True, collect_metrics=True,
        metrics_url="127.0.0.1:9002/metrics", metrics_interval_ms=250, plot="out.png",
        client_processes=3,
    )  # fmt: skip


def test_grpc_streaming_with_tls():
    settings = parsed(
        "-m", "repeat", "-i", "gRPC", "--streaming", "--sequence-id-range", "7",
        "--ssl-grpc-use-ssl", "--ssl-grpc-root-certifications-file", "root.pem",
        "--ssl-grpc-private-key-file", "key.pem",
        "--ssl-grpc-certificate-chain-file", "chain.pem",
        "--ssl-https-ca-certificates-file", "ignored.pem",
    )  # fmt: skip
    assert settings == PerfSettings(
        model="repeat", protocol="grpc", streaming=True, sequence_id_range=(7, 2**31 - 1),
        ssl={"root": "root.pem", "key": "key.pem", "cert": "chain.pem"},
    )  # fmt: skip


def test_embedded_with_repositories():
    settings = parsed("-m", "m", "--embedded", "--model-repository", "a",
                      "--model-repository", "b", "-i", "grpc")  # fmt: skip
    assert settings == PerfSettings(model="m", protocol="embedded", model_repository=("a", "b"))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--embedded"], "--embedded needs --model-repository"),
        (["--streaming"], "--streaming needs -i grpc"),
        (["--concurrency-range", "0:4"], "--concurrency-range 0:4: expected start"),
        (["--sequence-id-range", "x"], "--sequence-id-range x: expected start"),
        (["--shape", "INPUT0"], "--shape INPUT0: expected NAME:d1,d2,..."),
        (["-H", "nocolon"], "-H nocolon: expected NAME:VALUE"),
        (["--request-intervals", "/nonexistent/intervals"], "--request-intervals /nonexistent"),
    ],
)
def test_a_bad_value_is_a_perf_error(argv: list[str], message: str):
    with pytest.raises(PerfError, match=message.replace(".", r"\.")):
        parsed("-m", "m", *argv)
