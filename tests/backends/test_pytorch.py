"""The PyTorch backend on real TorchScript files, through HTTP, gRPC and the embedded API.

Every model is scripted or traced here with torch and saved into the test's
repository; answers are compared with the same file loaded by torch and
called directly.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from support.onnx_models import write_config
from tritonclient.utils import InferenceServerException

from naiad.core.errors import InvalidArgument
from naiad.engine.check import check_repositories

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.protocol,
    pytest.mark.frameworks,
    # torch deprecates TorchScript (a DeprecationWarning, a FutureWarning from 2.14); these
    # tests build TorchScript files on purpose.  Loading one is not excused: the backend
    # itself keeps torch.jit.load's warning quiet.
    pytest.mark.filterwarnings(
        r"ignore:`torch\.jit\.(script|trace|trace_method|save)` is deprecated:Warning"
    ),
]


class AddSub(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x + y, x - y


class AddSubDict(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"sum": x + y, "diff": x - y}


class DictInput(torch.nn.Module):
    def forward(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        return inputs["a"] * inputs["b"]


class Upper(torch.nn.Module):
    def forward(self, words: list[str]) -> list[str]:
        return [w.upper() + "!" for w in words]


class Identity(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.clone()


class Mode(torch.nn.Module):
    """Reports [inference mode, grad enabled] as forward() saw them."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x + 1
        return torch.tensor([y.is_inference(), torch.is_grad_enabled()]).expand(x.shape[0], 2)


class Fails(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ torch.ones(3, 3)


def mlp() -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))


def save(module: Any, model_dir: Path, config: str) -> Path:
    path = model_dir / "1" / "model.pt"
    path.parent.mkdir(parents=True, exist_ok=True)
    module.save(str(path))
    write_config(model_dir, 'backend: "pytorch"\n' + config)
    return path


def io(kind: str, *specs: tuple[str, str, str]) -> str:
    """``input [...]`` of (name, TYPE_X, dims) entries."""
    body = ", ".join(f'{{name: "{n}" data_type: {t} dims: {d}}}' for n, t, d in specs)
    return f"{kind} [{body}]\n"


def direct(path: Path, *args: Any) -> Any:
    """The saved model, loaded by torch and called on ``args``."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"`torch\.jit\.load` is ")
        module = torch.jit.load(str(path))
    with torch.no_grad():
        return module(*[torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args])


def failures(server: Any) -> dict[str, str]:
    index = server._call(server.dataplane.repository_index())
    return {e.name: e.reason for e in index if e.state == "UNAVAILABLE"}


MLP_CONFIG = (
    "max_batch_size: 8\n"
    + io("input", ("INPUT__0", "TYPE_FP32", "[8]"))
    + io("output", ("OUTPUT__0", "TYPE_FP32", "[3]"))
)


def test_mlp_answers_as_torch_does_over_http_grpc_and_embedded(repo, serve):
    example = torch.zeros(2, 8)
    scripted = save(torch.jit.script(mlp()), repo / "scripted", MLP_CONFIG)
    traced = save(torch.jit.trace(mlp(), example), repo / "traced", MLP_CONFIG)
    server = serve(repo, http=True, grpc=True)
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    http = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    # With no instance group the model runs where Triton would put it: on a GPU if torch
    # sees one (whose kernels round differently from the CPU's), else on the CPU.
    on_gpu = torch.cuda.is_available()
    close = {"rtol": 1e-5, "atol": 1e-6} if on_gpu else {}
    for name, path in (("scripted", scripted), ("traced", traced)):
        expected = direct(path, x).numpy()
        got = server.infer(name, {"INPUT__0": x})["OUTPUT__0"]
        np.testing.assert_allclose(got, expected, **close)
        for client, module in ((http, httpclient), (grpc, grpcclient)):
            tensor = module.InferInput("INPUT__0", list(x.shape), "FP32")
            tensor.set_data_from_numpy(x)
            got = client.infer(name, [tensor]).as_numpy("OUTPUT__0")
            np.testing.assert_allclose(got, expected, **close)
    config = server.model_config("scripted")
    assert config["platform"] == "pytorch_libtorch" and config["instance_group"][0]["kind"] == (
        "KIND_GPU" if on_gpu else "KIND_CPU"
    )
    assert "dynamic_batching" not in config  # nothing is auto-completed, as in Triton
    http.close()
    grpc.close()


def test_inputs_bind_by_argument_name_or_index_and_outputs_by_index(repo, serve):
    module = torch.jit.script(AddSub())
    # Listed in the opposite order of forward()'s arguments and of the result.
    by_name = save(
        module,
        repo / "by_name",
        io("input", ("y", "TYPE_INT32", "[4]"), ("x", "TYPE_INT32", "[4]"))
        + io("output", ("OUTPUT__1", "TYPE_INT32", "[4]"), ("OUTPUT__0", "TYPE_INT32", "[4]")),
    )
    save(
        module,
        repo / "by_index",
        io("input", ("INPUT__1", "TYPE_INT32", "[4]"), ("INPUT__0", "TYPE_INT32", "[4]"))
        + io("output", ("sum", "TYPE_INT32", "[4]"), ("difference", "TYPE_INT32", "[4]")),
    )
    save(
        torch.jit.trace(AddSub(), (torch.zeros(4), torch.zeros(4))),
        repo / "traced",
        io("input", ("x", "TYPE_FP32", "[4]"), ("y", "TYPE_FP32", "[4]"))
        + io("output", ("OUTPUT__0", "TYPE_FP32", "[4]"), ("OUTPUT__1", "TYPE_FP32", "[4]")),
    )
    server = serve(repo, grpc=True)
    x, y = np.array([5, 6, 7, 8], np.int32), np.array([1, 2, 3, 4], np.int32)
    total, diff = (t.numpy() for t in direct(by_name, x, y))
    got = server.infer("by_name", {"x": x, "y": y})
    np.testing.assert_array_equal(got["OUTPUT__0"], total)
    np.testing.assert_array_equal(got["OUTPUT__1"], diff)
    got = server.infer("by_index", {"INPUT__0": x, "INPUT__1": y})
    # No output uses <name>__<index>: they bind in config order, as in Triton.
    np.testing.assert_array_equal(got["sum"], total)
    np.testing.assert_array_equal(got["difference"], diff)
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    inputs = []
    for name, value in (("x", x.astype(np.float32)), ("y", y.astype(np.float32))):
        inputs.append(grpcclient.InferInput(name, [4], "FP32"))
        inputs[-1].set_data_from_numpy(value)
    result = client.infer("traced", inputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT__1"), diff.astype(np.float32))
    client.close()


def test_dict_output_and_dict_input(repo, serve):
    dict_out = save(
        torch.jit.script(AddSubDict()),
        repo / "dict_out",
        "max_batch_size: 4\n"
        + io("input", ("x", "TYPE_FP64", "[2]"), ("y", "TYPE_FP64", "[2]"))
        + io("output", ("diff", "TYPE_FP64", "[2]"), ("sum", "TYPE_FP64", "[2]")),
    )
    dict_in = save(
        torch.jit.script(DictInput()),
        repo / "dict_in",
        io("input", ("a", "TYPE_FP32", "[3]"), ("b", "TYPE_FP32", "[3]"))
        + io("output", ("product", "TYPE_FP32", "[3]")),
    )
    server = serve(repo, http=True)
    x = np.array([[1.5, 2.0], [3.0, -4.0]])
    y = np.array([[0.25, 1.0], [2.0, 2.0]])
    expected = direct(dict_out, x, y)
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    inputs = [httpclient.InferInput(n, [2, 2], "FP64") for n in ("x", "y")]
    inputs[0].set_data_from_numpy(x)
    inputs[1].set_data_from_numpy(y)
    result = client.infer("dict_out", inputs)
    for name in ("sum", "diff"):
        np.testing.assert_array_equal(result.as_numpy(name), expected[name].numpy())
    a = np.array([1, 2, 3], np.float32)
    b = np.array([4, 5, 6], np.float32)
    want = direct(dict_in, {"a": torch.from_numpy(a), "b": torch.from_numpy(b)}).numpy()
    np.testing.assert_array_equal(server.infer("dict_in", {"a": a, "b": b})["product"], want)
    client.close()


def test_bytes_inputs_and_outputs_are_lists_of_strings(repo, serve):
    module = torch.jit.script(Upper())
    output = io("output", ("OUTPUT__0", "TYPE_STRING", "[-1]"))
    path = save(module, repo / "upper", io("input", ("INPUT__0", "TYPE_STRING", "[-1]")) + output)
    batched = (
        "max_batch_size: 8\ndynamic_batching {}\n"
        'input [{name: "words" data_type: TYPE_STRING dims: [1] reshape {shape: []}}]\n'
        'output [{name: "OUTPUT__0" data_type: TYPE_STRING dims: [1] reshape {shape: []}}]\n'
    )
    save(module, repo / "batched", batched)
    save(module, repo / "two_d", io("input", ("INPUT__0", "TYPE_STRING", "[2, 2]")) + output)
    server = serve(repo, http=True, grpc=True)
    words = ["naïad", "torch", ""]
    expected = [w.encode() for w in direct(path, words)]
    data = np.array([w.encode() for w in words], dtype=np.object_)
    assert server.infer("upper", {"INPUT__0": data})["OUTPUT__0"].tolist() == expected
    column = data.reshape(3, 1)
    assert server.infer("batched", {"words": column})["OUTPUT__0"].tolist() == [
        [e] for e in expected
    ]
    for client, module_ in (
        (httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}"), httpclient),
        (grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}"), grpcclient),
    ):
        tensor = module_.InferInput("INPUT__0", [3], "BYTES")
        tensor.set_data_from_numpy(data)
        assert client.infer("upper", [tensor]).as_numpy("OUTPUT__0").tolist() == expected
        client.close()
    bad = np.array([b"ok", b"\xff\xfe"], dtype=np.object_)
    with pytest.raises(InvalidArgument, match="input 'INPUT__0' holds bytes that are not UTF-8"):
        server.infer("upper", {"INPUT__0": bad})
    assert "1 dimensional" not in failures(server)["two_d"]  # naiad's own wording
    assert "a List[str] has one" in failures(server)["two_d"]


DATATYPES = {
    "BOOL": np.bool_,
    "UINT8": np.uint8,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
    "UINT64": np.uint64,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "FP16": np.float16,
    "FP32": np.float32,
    "FP64": np.float64,
    "BF16": ml_dtypes.bfloat16,
}


def test_every_datatype_round_trips(repo, serve):
    module = torch.jit.script(Identity())
    for name in DATATYPES:
        save(
            module,
            repo / f"id_{name.lower()}",
            "max_batch_size: 4\n"
            + io("input", ("INPUT__0", f"TYPE_{name}", "[3]"))
            + io("output", ("OUTPUT__0", f"TYPE_{name}", "[3]")),
        )
    server = serve(repo, http=True)
    rng = np.random.default_rng(0)
    for name, dtype in DATATYPES.items():
        data = (rng.random((2, 3)) * 100).astype(dtype)
        if dtype is np.bool_:
            data = rng.integers(0, 2, (2, 3)).astype(np.bool_)
        out = server.infer(f"id_{name.lower()}", {"INPUT__0": data})["OUTPUT__0"]
        assert out.dtype == data.dtype, name
        assert out.tobytes() == data.tobytes(), name
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    flags = np.array([[True, False, True]])
    tensor = httpclient.InferInput("INPUT__0", [1, 3], "BOOL")
    tensor.set_data_from_numpy(flags)
    assert client.infer("id_bool", [tensor]).as_numpy("OUTPUT__0").tolist() == flags.tolist()
    client.close()


def test_output_dtype_other_than_the_configs_fails_the_request(repo, serve):
    save(
        torch.jit.script(Identity()),
        repo / "wrong",
        io("input", ("INPUT__0", "TYPE_INT64", "[2]"))
        + io("output", ("OUTPUT__0", "TYPE_FP32", "[2]")),
    )
    save(torch.jit.script(Fails()), repo / "fails", MLP_CONFIG.replace("[8]", "[2]"))
    server = serve(repo)
    with pytest.raises(Exception, match="expects datatype TYPE_FP32 for output 'OUTPUT__0', "):
        server.infer("wrong", {"INPUT__0": np.array([1, 2], np.int64)})
    with pytest.raises(Exception, match="PyTorch execute failure"):
        server.infer("fails", {"INPUT__0": np.ones((1, 2), np.float32)})
    # Wrong shape or datatype never reaches torch: the core names the input.
    with pytest.raises(InvalidArgument, match="INPUT__0"):
        server.infer("wrong", {"INPUT__0": np.array([1, 2, 3], np.int64)})
    with pytest.raises(InvalidArgument, match="INPUT__0"):
        server.infer("wrong", {"INPUT__0": np.array([1, 2], np.int32)})
    assert server.model_ready("wrong") and server.model_ready("fails")


def test_dynamic_batching_runs_concurrent_requests_as_one_batch(repo, serve):
    path = save(
        torch.jit.script(mlp()),
        repo / "mlp",
        MLP_CONFIG + "dynamic_batching { preferred_batch_size: [4] "
        "max_queue_delay_microseconds: 30000000 }\ninstance_group [{kind: KIND_CPU count: 1}]\n",
    )
    server = serve(repo, http=True)
    rng = np.random.default_rng(2)
    rows = [rng.standard_normal((1, 8)).astype(np.float32) for _ in range(4)]

    async def together() -> list[dict[str, np.ndarray]]:
        return await asyncio.gather(*(server.infer_async("mlp", {"INPUT__0": r}) for r in rows))

    results = server._call(together())
    # Row i of the batch, as torch computes the four rows together.
    expected = direct(path, np.concatenate(rows)).numpy()
    for i, result in enumerate(results):
        np.testing.assert_allclose(result["OUTPUT__0"], expected[i : i + 1], rtol=1e-6)
    stats = server.statistics("mlp")["model_stats"][0]
    assert stats["execution_count"] == 1 and stats["inference_count"] == 4
    # The same over HTTP: four clients' requests, one execution.
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}", concurrency=4)
    pending = []
    for row in rows:
        tensor = httpclient.InferInput("INPUT__0", [1, 8], "FP32")
        tensor.set_data_from_numpy(row)
        pending.append(client.async_infer("mlp", [tensor]))
    for i, call in enumerate(pending):
        got = call.get_result().as_numpy("OUTPUT__0")
        np.testing.assert_allclose(got, expected[i : i + 1], rtol=1e-6)
    stats = server.statistics("mlp")["model_stats"][0]
    assert stats["execution_count"] == 2 and stats["inference_count"] == 8
    client.close()


def param(key: str, value: str) -> str:
    return f'parameters {{ key: "{key}" value: {{ string_value: "{value}" }} }}\n'


MODE_CONFIG = (
    "max_batch_size: 2\n"
    + io("input", ("INPUT__0", "TYPE_FP32", "[1]"))
    + io("output", ("OUTPUT__0", "TYPE_BOOL", "[2]"))
)


@pytest.fixture
def fresh_thread_counts():
    """torch's pools are process-wide and the backend sets them once per process (the
    first model wins, as in Triton): a test that checks them starts from none set, and
    leaves them as it found them for the tests that share its process."""
    from naiad.backends.pytorch import threads

    before = torch.get_num_threads()
    saved = dict(threads._counts)
    threads._counts.clear()
    yield
    torch.set_num_threads(before)
    threads._counts.clear()
    threads._counts.update(saved)


def test_parameters_change_execution_and_bad_values_fail_the_load(repo, serve, fresh_thread_counts):
    module = torch.jit.script(Mode())
    save(module, repo / "default", MODE_CONFIG)
    save(module, repo / "no_grad", MODE_CONFIG + param("INFERENCE_MODE", "false"))
    save(
        torch.jit.script(mlp()),
        repo / "tuned",
        MLP_CONFIG
        + "instance_group [{kind: KIND_CPU count: 2}]\n"
        + param("DISABLE_OPTIMIZED_EXECUTION", "true")
        + param("ENABLE_WEIGHT_SHARING", "ON")
        + param("ENABLE_NVFUSER", "1")
        + param("ENABLE_CACHE_CLEANING", "true")
        + param("ENABLE_JIT_PROFILING", "false")
        + param("ENABLE_JIT_EXECUTOR", "true")
        + param("INTRA_OP_THREAD_COUNT", "1")
        + param("INTER_OP_THREAD_COUNT", "1"),
    )
    save(module, repo / "maybe", MODE_CONFIG + param("INFERENCE_MODE", "maybe"))
    save(module, repo / "negative", MODE_CONFIG + param("INTRA_OP_THREAD_COUNT", "-1"))
    server = serve(repo)
    x = np.zeros((1, 1), np.float32)
    # [inference mode, grad enabled] inside forward()
    assert server.infer("default", {"INPUT__0": x})["OUTPUT__0"].tolist() == [[True, False]]
    assert server.infer("no_grad", {"INPUT__0": x})["OUTPUT__0"].tolist() == [[False, False]]
    rows = np.ones((2, 8), np.float32)
    want = server.infer("tuned", {"INPUT__0": rows})["OUTPUT__0"]
    np.testing.assert_allclose(want, mlp()(torch.from_numpy(rows)).detach().numpy(), rtol=1e-6)
    first, second = server.dataplane.registry.get("tuned").instances
    assert first.module is second.module  # ENABLE_WEIGHT_SHARING
    # INTRA_OP_THREAD_COUNT is process-wide, as in Triton: the threads started from now on
    # (those that execute) get it; torch keeps a thread's own count once it has one, so
    # the count is read on a new thread, not on this test's
    seen: list[int] = []
    reader = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    reader.start()
    reader.join()
    assert seen == [1]
    failed = failures(server)
    assert "parameter 'INFERENCE_MODE' must be true or false" in failed["maybe"]
    assert "'maybe'" in failed["maybe"]
    assert "parameter 'INTRA_OP_THREAD_COUNT' must be a whole number" in failed["negative"]
    problems = check_repositories([repo]).problems
    assert sorted(Path(p.partition(":")[0]).name for p in problems) == ["maybe", "negative"]
    assert "parameter 'INFERENCE_MODE'" in problems[0] and "INTRA_OP_THREAD_COUNT" in problems[1]


def test_a_short_batch_computes_with_one_intra_op_thread_and_a_long_one_with_the_team(
    repo, serve, fresh_thread_counts
):
    """torch keeps an OpenMP team per calling thread, and two teams on few cores make
    every call pay a futex wake: a batch that is short computes with one intra-op thread,
    on whichever thread runs it (here, once the model is measured, the embedded
    caller's); a long batch with the team (INTRA_OP_THREAD_COUNT)."""
    save(torch.jit.script(mlp()), repo / "mlp", MLP_CONFIG + param("INTRA_OP_THREAD_COUNT", "2"))
    torch.manual_seed(0)
    wide = torch.nn.Linear(256, 256)
    save(
        torch.jit.script(wide),
        repo / "wide",
        "max_batch_size: 8192\n"
        + io("input", ("INPUT__0", "TYPE_FP32", "[256]"))
        + io("output", ("OUTPUT__0", "TYPE_FP32", "[256]"))
        + param("INTRA_OP_THREAD_COUNT", "2"),
    )
    server = serve(repo)
    short = np.ones((1, 8), np.float32)
    long = np.random.default_rng(0).standard_normal((8192, 256)).astype(np.float32)
    seen: dict[str, int] = {}

    def caller() -> None:
        for name, module, x in (("mlp", mlp(), short), ("wide", wide, long)):
            expected = module(torch.from_numpy(x)).detach().numpy()
            for _ in range(30 if x is short else 8):
                got = server.infer(name, {"INPUT__0": x})["OUTPUT__0"]
                np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
            if x is short:
                seen["caller, after short batches"] = torch.get_num_threads()

    thread = threading.Thread(target=caller)
    thread.start()
    thread.join()
    for name, x in (("mlp", short), ("wide", long)):
        (instance,) = server.dataplane.registry.get(name).instances
        seen[name] = instance.intra_op.threads_for(x.size)
    assert seen == {"caller, after short batches": 1, "mlp": 1, "wide": 2}


def test_a_size_of_batch_computes_the_faster_way_by_its_fastest_calls():
    """The team first; a size short enough with it is tried on one thread, and then the
    faster way is kept.  Warm-up calls (TorchScript profiles its first ones) and slow
    calls do not decide: the fastest after the warm-up does, per size of batch."""
    from naiad.backends.pytorch.threads import IntraOpThreads

    trial, short = IntraOpThreads.TRIAL_NS, IntraOpThreads.SHORT_NS
    small = IntraOpThreads(team=4)
    assert small.threads_for(8) == 4  # nothing known: the team
    for ns in (trial * 100, trial * 10, short * 3):  # two warm-up calls, then a few
        small.record(8, 4, ns)
    assert small.threads_for(8) == 1  # short enough with the team to try one thread
    for ns in (trial, trial, short * 2):  # faster alone than with the team (its wake-ups)
        small.record(8, 1, ns)
    assert small.threads_for(8) == 1
    small.record(8, 1, trial)  # a slow call does not count: the fastest does
    assert small.threads_for(8) == 1
    assert small.threads_for(1 << 20) == 4  # another size is judged on its own

    parallel = IntraOpThreads(team=4)
    for ns in (trial, trial, short * 2):
        parallel.record(8, 4, ns)
    for ns in (short, short, short * 5):  # slower alone, and not short
        parallel.record(8, 1, ns)
    assert parallel.threads_for(8) == 4
    for ns in (short // 2, short // 2, short):  # on one thread within SHORT_NS: stays there
        parallel.record(16, 4, ns)
    for ns in (short, short, short):
        parallel.record(16, 1, ns)
    assert parallel.threads_for(16) == 1

    long = IntraOpThreads(team=4)
    for ns in (trial * 2, trial * 2, trial * 2):  # too long with the team to try alone
        long.record(8, 4, ns)
    assert long.threads_for(8) == 4
    assert IntraOpThreads(team=1).threads_for(8) == 1  # a team of one is one thread


def test_load_errors_say_what_is_wrong_and_the_server_stays_up(repo, serve):
    good = torch.jit.script(AddSub())
    save(good, repo / "no_io", "")
    one = ("TYPE_FP32", "[1]")
    out0 = io("output", ("OUTPUT__0", *one))
    save(good, repo / "misnamed", io("input", ("x", *one), ("z", *one)) + out0)
    save(good, repo / "mixed", io("input", ("x", *one), ("INPUT__1", *one)) + out0)
    outputs = io("output", ("OUTPUT__0", *one), ("OUTPUT__2", *one))
    save(good, repo / "three_out", io("input", ("x", *one), ("y", *one)) + outputs)
    save(good, repo / "gpu", MLP_CONFIG + "instance_group [{kind: KIND_GPU gpus: [0]}]\n")
    corrupt = save(good, repo / "corrupt", MLP_CONFIG)
    corrupt.write_bytes(b"not a TorchScript archive")
    eager = save(good, repo / "eager", MLP_CONFIG)
    torch.save(mlp(), str(eager))
    (repo / "aoti" / "1").mkdir(parents=True)
    (repo / "aoti" / "1" / "model.pt2").write_bytes(b"")
    write_config(repo / "aoti", 'platform: "torch_aoti"\n' + MLP_CONFIG)
    save(torch.jit.script(mlp()), repo / "ok", MLP_CONFIG)
    # The embedded API takes the host's GPUs as given: one that torch cannot see.
    server = serve(repo, gpus=(0,), allow_gpu_metrics=False)
    failed = failures(server)
    assert (
        "a TorchScript model declares no input/output shapes; add 'input' and 'output'"
        in (failed["no_io"])
    )
    assert "input 'z' is neither an argument of forward() (x, y)" in failed["misnamed"]
    assert "mix forward()'s argument names ('x') and <name>__<index>" in failed["mixed"]
    assert (
        "output 'OUTPUT__2' is element 2 of forward()'s result, which has 2"
        in (failed["three_out"])
    )
    if torch.cuda.is_available():  # it gets past the device, to what else is wrong
        assert "the configuration has 1 inputs but forward() takes 2" in failed["gpu"]
    else:
        assert "KIND_GPU but torch sees no CUDA device" in failed["gpu"]
    assert "failed to load model 'corrupt' from" in failed["corrupt"]
    assert "model.pt" in failed["corrupt"]
    assert "not TorchScript" in failed["eager"]
    assert "'torch_aoti'" in failed["aoti"] and "not supported" in failed["aoti"]
    np.testing.assert_array_equal(
        server.infer("ok", {"INPUT__0": np.zeros((1, 8), np.float32)})["OUTPUT__0"].shape, (1, 3)
    )
    with pytest.raises(Exception, match="has no available versions|not ready|unavailable"):
        server.infer("corrupt", {"INPUT__0": np.zeros((1, 8), np.float32)})
    problems = "\n".join(check_repositories([repo]).problems)
    assert f"{repo / 'no_io'}: model 'no_io': a TorchScript model declares no" in problems


def test_without_torch_the_load_error_names_the_extra(repo):
    save(torch.jit.script(mlp()), repo / "mlp", MLP_CONFIG)
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"
        "from naiad import Server\n"
        f"server = Server(model_repository={str(repo)!r})\n"
        "server.start()\n"
        "print(dict(server.dataplane.failed_models())['mlp'])\n"
        "server.stop()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert "backend 'pytorch' is not available" in done.stdout
    assert "pip install 'naiad[torch]'" in done.stdout


def test_a_server_error_reaches_clients_as_their_error(repo, serve):
    save(torch.jit.script(Fails()), repo / "fails", MLP_CONFIG.replace("[8]", "[2]"))
    server = serve(repo, http=True)
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    tensor = httpclient.InferInput("INPUT__0", [1, 2], "FP32")
    tensor.set_data_from_numpy(np.ones((1, 2), np.float32))
    with pytest.raises(InferenceServerException, match="PyTorch execute failure"):
        client.infer("fails", [tensor])
    assert client.is_model_ready("fails")
    client.close()
