"""Every flag of ``tritonserver --help`` parses in ``naiad serve``, with its value checked.

The lists below are taken from the real help: ``tritonserver --help`` of the
2.51 reference server, and ``src/command_line_parser.cc`` of the newest
release (2.71), which adds four flags.  A flag naiad has no use for is
accepted (:mod:`naiad.options.triton_flags`) and named in a warning; a value
of the wrong type is still a usage error, as in Triton.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from naiad.core.errors import InvalidArgument
from naiad.options.declarations import ServerOptions, options_by_flag
from naiad.options.flags import options_from_args, serve_parser
from naiad.options.triton_flags import WITHOUT_EFFECT, given, warnings
from naiad.runner.options import ServeArgs

pytestmark = pytest.mark.unit

#: ``tritonserver --help`` of Triton 2.51, every flag in its order (but --help).
TRITON_2_51 = """
--id --exit-timeout-secs --log-verbose --log-info --log-warning --log-error --log-format
--log-file --model-store --model-repository --exit-on-error --disable-auto-complete-config
--strict-readiness --model-control-mode --repository-poll-secs --load-model
--model-config-name --model-load-thread-count --model-load-retry-count --model-namespacing
--enable-peer-access --allow-http --http-address --http-port --reuse-http-port
--http-header-forward-pattern --http-thread-count --http-restricted-api --allow-grpc
--grpc-address --grpc-port --reuse-grpc-port --grpc-header-forward-pattern
--grpc-infer-allocation-pool-size --grpc-use-ssl --grpc-use-ssl-mutual --grpc-server-cert
--grpc-server-key --grpc-root-cert --grpc-infer-response-compression-level
--grpc-keepalive-time --grpc-keepalive-timeout --grpc-keepalive-permit-without-calls
--grpc-http2-max-pings-without-data --grpc-http2-min-recv-ping-interval-without-data
--grpc-http2-max-ping-strikes --grpc-max-connection-age --grpc-max-connection-age-grace
--grpc-restricted-protocol --allow-sagemaker --sagemaker-port --sagemaker-safe-port-range
--sagemaker-thread-count --allow-vertex-ai --vertex-ai-port --vertex-ai-thread-count
--vertex-ai-default-model --allow-metrics --allow-gpu-metrics --allow-cpu-metrics
--metrics-address --metrics-port --metrics-interval-ms --metrics-config --trace-config
--backend-directory --backend-config --repoagent-directory --cache-config --cache-directory
--rate-limit --rate-limit-resource --pinned-memory-pool-byte-size
--cuda-memory-pool-byte-size --cuda-virtual-address-size --min-supported-compute-capability
--buffer-manager-thread-count --host-policy --model-load-gpu-limit --strict-model-config
--response-cache-byte-size --trace-file --trace-level --trace-rate --trace-count
--trace-log-frequency
""".split()

#: The flags the newest release (2.71) has beyond 2.51's.
TRITON_NEWEST_ADDS = ["--allow-client-shm", "--grpc-infer-thread-count",
                      "--grpc-max-response-pool-size", "--http-max-input-size"]  # fmt: skip

#: A value of each flag as Triton's docs and deployments write it (None: a bare switch).
VALUES: dict[str, str | None] = {
    "--id": "triton-a", "--exit-timeout-secs": "30", "--log-verbose": "1",
    "--log-info": "true", "--log-warning": "true", "--log-error": "true",
    "--log-format": "ISO8601", "--log-file": "/tmp/triton.log", "--model-store": "/models",
    "--model-repository": "/models", "--exit-on-error": "false",
    "--disable-auto-complete-config": None, "--strict-readiness": "false",
    "--model-control-mode": "explicit", "--repository-poll-secs": "5", "--load-model": "simple",
    "--model-config-name": "h100", "--model-load-thread-count": "2",
    "--model-load-retry-count": "1", "--model-namespacing": "true",
    "--enable-peer-access": "false", "--allow-http": "true", "--http-address": "127.0.0.1",
    "--http-port": "8000", "--reuse-http-port": "true", "--http-header-forward-pattern": "x-.*",
    "--http-thread-count": "8", "--http-restricted-api": "model-repository:admin-key=secret",
    "--allow-grpc": "true", "--grpc-address": "127.0.0.1", "--grpc-port": "8001",
    "--reuse-grpc-port": "true", "--grpc-header-forward-pattern": "x-.*",
    "--grpc-infer-allocation-pool-size": "8", "--grpc-use-ssl": "false",
    "--grpc-use-ssl-mutual": "false", "--grpc-server-cert": "server.pem",
    "--grpc-server-key": "server.key", "--grpc-root-cert": "ca.pem",
    "--grpc-infer-response-compression-level": "low", "--grpc-keepalive-time": "7200000",
    "--grpc-keepalive-timeout": "20000", "--grpc-keepalive-permit-without-calls": "1",
    "--grpc-http2-max-pings-without-data": "2",
    "--grpc-http2-min-recv-ping-interval-without-data": "300000",
    "--grpc-http2-max-ping-strikes": "2", "--grpc-max-connection-age": "60000",
    "--grpc-max-connection-age-grace": "5000",
    "--grpc-restricted-protocol": "model-repository:admin-key=secret",
    "--allow-sagemaker": "true", "--sagemaker-port": "8080",
    "--sagemaker-safe-port-range": "8081-8085", "--sagemaker-thread-count": "8",
    "--allow-vertex-ai": "true", "--vertex-ai-port": "8080", "--vertex-ai-thread-count": "8",
    "--vertex-ai-default-model": "simple", "--allow-metrics": "true",
    "--allow-gpu-metrics": "false", "--allow-cpu-metrics": "true",
    "--metrics-address": "127.0.0.1", "--metrics-port": "8002", "--metrics-interval-ms": "2000",
    "--metrics-config": "summary_latencies=true", "--trace-config": "rate=100",
    "--backend-directory": "/opt/tritonserver/backends",
    "--backend-config": "python,shm-default-byte-size=1048576",
    "--repoagent-directory": "/opt/tritonserver/repoagents",
    "--cache-config": "local,size=1048576", "--cache-directory": "/opt/tritonserver/caches",
    "--rate-limit": "execution_count", "--rate-limit-resource": "R1:10:0",
    "--pinned-memory-pool-byte-size": "268435456",
    "--cuda-memory-pool-byte-size": "0:67108864", "--cuda-virtual-address-size": "0:1073741824",
    "--min-supported-compute-capability": "6.0", "--buffer-manager-thread-count": "0",
    "--host-policy": "gpu0,numa-node=0", "--model-load-gpu-limit": "0:0.8",
    "--strict-model-config": "false", "--response-cache-byte-size": "1048576",
    "--trace-file": "/tmp/trace.json", "--trace-level": "TIMESTAMPS", "--trace-rate": "1000",
    "--trace-count": "-1", "--trace-log-frequency": "0", "--allow-client-shm": "true",
    "--grpc-infer-thread-count": "2", "--grpc-max-response-pool-size": "64",
    "--http-max-input-size": "1048576",
}  # fmt: skip

EVERY_FLAG = [*TRITON_2_51, *TRITON_NEWEST_ADDS]


def test_the_values_cover_every_triton_flag() -> None:
    assert sorted(VALUES) == sorted(EVERY_FLAG)


@pytest.mark.parametrize("flag", EVERY_FLAG)
def test_every_triton_flag_parses_in_both_spellings(flag: str) -> None:
    value = VALUES[flag]
    spellings = [[flag]] if value is None else [[f"{flag}={value}"], [flag, value]]
    for args in spellings:
        options = options_from_args(serve_parser().parse_args(args))
        assert isinstance(options, ServerOptions)


def test_all_triton_flags_at_once_and_repeated() -> None:
    args = [f"{f}={v}" if v is not None else f for f, v in VALUES.items()]
    args += ["--model-repository=/more", "--load-model=other", "--host-policy=gpu1,numa-node=1",
             "--cuda-memory-pool-byte-size=1:67108864"]  # fmt: skip
    options = options_from_args(serve_parser().parse_args(args))
    assert options.model_repositories == (Path("/models"), Path("/models"), Path("/more"))
    assert options.load_models == ("simple", "other")
    assert options.model_load_thread_count == 2
    assert options.model_load_retry_count == 1


def test_the_flags_without_effect_are_exactly_the_triton_flags_naiad_has_no_option_for() -> None:
    options = {
        name
        for _, spec in options_by_flag().values()
        for name in (spec.flag, *spec.aliases, *(o.flag for o in spec.older))
    }
    inert = [spec.flag for spec in WITHOUT_EFFECT]
    assert len(inert) == len(set(inert))
    assert not options & set(inert), "a flag is both an option and without effect"
    assert sorted(set(EVERY_FLAG) - options) == sorted(inert)


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--model-load-thread-count", "four"),
        ("--model-load-retry-count", "-1"),
        ("--http-thread-count", "many"),
        ("--pinned-memory-pool-byte-size", "256MB"),
        ("--cuda-memory-pool-byte-size", "67108864"),
        ("--cuda-virtual-address-size", "0:1GB"),
        ("--model-load-gpu-limit", "0:most"),
        ("--sagemaker-safe-port-range", "8081"),
        ("--host-policy", "numa-node=0"),
        ("--min-supported-compute-capability", "ampere"),
        ("--allow-sagemaker", "maybe"),
        ("--model-namespacing", "yes please"),
    ],
)
def test_a_value_of_the_wrong_type_is_a_usage_error(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        serve_parser().parse_args([f"{flag}={value}"])
    assert exited.value.code == 2
    assert f"argument {flag}" in capsys.readouterr().err


def _warned(*args: str) -> list[str]:
    return warnings(given(serve_parser().parse_args(list(args))))


def test_one_warning_per_flag_given_naming_it_and_why() -> None:
    found = _warned("--http-thread-count=8", "--backend-directory", "/opt/backends",
                    "--pinned-memory-pool-byte-size=1", "--pinned-memory-pool-byte-size=2")  # fmt: skip
    assert found == [
        "--http-thread-count has no effect in naiad: naiad's HTTP frontend is one event loop "
        "per process; use --workers N for more processes",
        "--backend-directory has no effect in naiad: naiad's backends are Python modules found "
        "by name; there are no backend libraries to search",
        "--pinned-memory-pool-byte-size has no effect in naiad: naiad keeps no pinned host "
        "memory pool; the backend frameworks move tensors to and from GPUs",
    ]
    assert _warned() == []


def test_a_switch_warns_only_when_it_would_change_something_in_triton() -> None:
    assert _warned("--allow-sagemaker=false", "--allow-vertex-ai=false",
                   "--enable-peer-access=true") == []  # fmt: skip
    assert [w.split()[0] for w in _warned("--allow-sagemaker", "--enable-peer-access=false")] == [
        "--enable-peer-access",
        "--allow-sagemaker",
    ]


def test_model_namespacing_is_an_option_now_with_no_warning() -> None:
    assert _warned("--model-namespacing=true") == []
    args = serve_parser().parse_args(["--model-namespacing=true"])
    assert options_from_args(args).model_namespacing


def test_the_flags_given_reach_the_server_options() -> None:
    options = options_from_args(serve_parser().parse_args(["--host-policy=a,cpu-cores=0-3",
                                                           "--allow-vertex-ai=true"]))  # fmt: skip
    assert options.triton_flags_without_effect == ("--allow-vertex-ai", "--host-policy")
    plain = options_from_args(serve_parser().parse_args([]))
    assert plain.triton_flags_without_effect == ()
    assert dataclasses.replace(plain, model_repositories=()) == ServerOptions()


def test_the_runner_takes_the_same_flags(tmp_path: Path) -> None:
    args = ServeArgs.parse(tmp_path, ["--http-thread-count=4", "--model-load-retry-count=2"])
    options = args.options()
    assert options.triton_flags_without_effect == ("--http-thread-count",)
    assert options.model_load_retry_count == 2
    with pytest.raises(InvalidArgument, match="--buffer-manager-thread-count"):
        ServeArgs.parse(tmp_path, ["--buffer-manager-thread-count=lots"])
