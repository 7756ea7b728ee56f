"""Model control through the data plane: start-up, explicit load/unload, polling, index.

The last tests drive the same operations with tritonclient over HTTP and gRPC.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from support.repository_models import (
    Gates,
    add_const_bytes,
    fp32,
    gate_backend,
    write_gate_model,
    write_model,
)

from naiad import Server
from naiad.core.errors import Internal, InvalidArgument, NaiadError, Unavailable
from naiad.engine.repository_index import ModelIndex

pytestmark = pytest.mark.protocol

WAIT_S = 30.0
X = [[1.0, 2.0, 3.0, 4.0]]


@contextlib.asynccontextmanager
async def serving(repo: Path, gates: Gates | None = None, **settings: Any) -> AsyncIterator[Server]:
    server = Server(repo, **settings)
    if gates is not None:
        server.dataplane.backends.register("gate", gate_backend(gates))
    await server.start_async()
    try:
        yield server
    finally:
        if gates is not None:
            gates.load_open.set()
            gates.execute_open.set()
        await server.stop_async(10)


async def eventually(check: Callable[[], Awaitable[bool] | bool], what: str) -> None:
    """Poll ``check`` until it holds, failing after a generous bound."""
    deadline = time.monotonic() + WAIT_S
    while True:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def added(server: Server, name: str, version: int | None = None) -> float:
    """The constant model ``name`` adds (tells versions and reloads apart)."""
    out = await server.infer_async(name, {"INPUT0": fp32(X)}, version=version)
    return float(out["OUTPUT0"][0][0]) - 1.0


def index_of(rows: list[ModelIndex]) -> dict[tuple[str, str], tuple[str, str]]:
    return {(r.name, r.version): (r.state, r.reason) for r in rows}


@contextlib.asynccontextmanager
async def traffic(server: Server, name: str, clients: int = 4) -> AsyncIterator[list[Any]]:
    """Requests from ``clients`` concurrent callers until the block ends; yields the results."""
    stop = asyncio.Event()
    seen: list[Any] = []

    async def client() -> None:
        while not stop.is_set():
            try:
                seen.append(await added(server, name))
            except NaiadError as exc:
                seen.append(exc)
                await asyncio.sleep(0)  # an error may come back without ever yielding

    workers = [asyncio.create_task(client()) for _ in range(clients)]
    try:
        yield seen
    finally:
        stop.set()
        await asyncio.gather(*workers)


# -- start-up and mode rules ---------------------------------------------------------


async def test_explicit_start_loads_named_models_and_lists_others_by_name(repo: Path) -> None:
    write_model(repo, "a", 1, 1.0)
    write_model(repo, "b", 1, 2.0)
    async with serving(repo, model_control_mode="explicit", load_models=("a",)) as server:
        rows = await server.dataplane.repository_index()
        assert rows == [ModelIndex("a", "1", "READY"), ModelIndex("b")]
        assert await server.dataplane.repository_index(ready=True) == rows[:1]


@pytest.mark.parametrize("mode", ["none", "poll"])
async def test_load_and_unload_refused_unless_explicit(repo: Path, mode: str) -> None:
    write_model(repo, "a", 1, 1.0)
    async with serving(repo, model_control_mode=mode, repository_poll_secs=3600) as server:
        for call in (server.dataplane.load_model("a"), server.dataplane.unload_model("a")):
            with pytest.raises(Unavailable, match="explicit model load / unload is not allowed"):
                await call


async def test_missing_start_up_model_is_a_failure(repo: Path) -> None:
    async with serving(repo, model_control_mode="explicit", load_models=("nope",)) as server:
        failed = dict(server.dataplane.failed_models())
        assert "failed to poll from model repository" in failed["nope"]


# -- explicit load ------------------------------------------------------------------------


async def test_load_then_unload(repo: Path) -> None:
    write_model(repo, "a", 1, 3.0)
    async with serving(repo, model_control_mode="explicit") as server:
        dp = server.dataplane
        await dp.load_model("a")
        assert await added(server, "a") == 3.0
        await dp.unload_model("a")
        assert index_of(await dp.repository_index())[("a", "1")] == ("UNAVAILABLE", "unloaded")
        with pytest.raises(NaiadError):
            await added(server, "a")
        await dp.unload_model("a")  # unloading what is not loaded succeeds
        await dp.unload_model("never_there")


async def test_load_of_missing_model_is_internal(repo: Path) -> None:
    async with serving(repo, model_control_mode="explicit") as server:
        with pytest.raises(Internal, match="failed to poll from model repository"):
            await server.dataplane.load_model("nope")


async def test_load_with_config_override(repo: Path) -> None:
    write_model(repo, "a", 1, 1.0)
    write_model(repo, "a", 2, 2.0)
    async with serving(repo, model_control_mode="explicit", load_models=("a",)) as server:
        dp = server.dataplane
        assert await added(server, "a") == 2.0
        override = {"backend": "onnxruntime", "max_batch_size": 4,
                    "version_policy": {"specific": {"versions": [1]}}}  # fmt: skip
        await dp.load_model("a", json.dumps(override))
        assert dp.model_config("a").max_batch_size == 4
        assert await added(server, "a") == 1.0
        rows = index_of(await dp.repository_index())
        assert rows[("a", "1")] == ("READY", "")
        assert rows[("a", "2")] == ("UNAVAILABLE", "unloaded")  # listed on, as in Triton
        # Without a config, an unchanged folder keeps what the override made of it (Triton);
        # once the folder changes, the config on disk is read again.
        await dp.load_model("a")
        assert dp.model_config("a").max_batch_size == 4
        assert await added(server, "a") == 1.0
        write_model(repo, "a", 2, 2.0, config='backend: "onnxruntime"\nmax_batch_size: 8\n')
        await dp.load_model("a")
        assert dp.model_config("a").max_batch_size == 8
        assert await added(server, "a") == 2.0
        rows = index_of(await dp.repository_index())
        assert rows[("a", "1")] == ("UNAVAILABLE", "unloaded")
        assert rows[("a", "2")] == ("READY", "")


async def test_load_with_file_override_writes_a_private_folder(repo: Path) -> None:
    config = json.dumps({"backend": "onnxruntime", "max_batch_size": 8})
    async with serving(repo, model_control_mode="explicit") as server:
        dp = server.dataplane
        await dp.load_model("fresh", config, {"1/model.onnx": add_const_bytes(7.0)})
        assert await added(server, "fresh") == 7.0
        model_dir = dp.registry.find("fresh", 1).context.model_dir  # type: ignore[union-attr]
        assert not model_dir.is_relative_to(repo) and model_dir.is_dir()
        # A second override replaces the first; its folder goes once nothing uses it.
        await dp.load_model("fresh", config, {"1/model.onnx": add_const_bytes(8.0)})
        assert await added(server, "fresh") == 8.0
        assert not model_dir.exists()
        newer = dp.registry.find("fresh", 1).context.model_dir  # type: ignore[union-attr]
        await dp.unload_model("fresh")
        assert not newer.exists()


@pytest.mark.parametrize(
    "key", ["../escape.onnx", "1/../../escape.onnx", "/tmp/escape.onnx", "1//x", "1/./x", "1\\x"]
)
async def test_file_override_paths_stay_inside(repo: Path, tmp_path: Path, key: str) -> None:
    config = json.dumps({"backend": "onnxruntime", "max_batch_size": 8})
    async with serving(repo, model_control_mode="explicit") as server:
        with pytest.raises(InvalidArgument):
            await server.dataplane.load_model("m", config, {key: b"x"})
    assert not (tmp_path / "escape.onnx").exists()
    assert "m" not in server.dataplane.registry.models


async def test_file_override_needs_config_and_a_safe_name(repo: Path) -> None:
    files = {"1/model.onnx": add_const_bytes(1.0)}
    async with serving(repo, model_control_mode="explicit") as server:
        with pytest.raises(InvalidArgument, match="config"):
            await server.dataplane.load_model("m", None, files)
        with pytest.raises(InvalidArgument, match="invalid model name"):
            await server.dataplane.load_model("..", '{"backend": "onnxruntime"}', files)


async def test_failed_initialize_is_invalid_arg_and_listed(repo: Path) -> None:
    model_dir = write_model(repo, "bad", 1, 1.0)
    (model_dir / "1" / "model.onnx").write_bytes(b"not an onnx model")
    async with serving(repo, model_control_mode="explicit") as server:
        with pytest.raises(InvalidArgument, match="load failed for model 'bad'"):
            await server.dataplane.load_model("bad")
        rows = await server.dataplane.repository_index()
        assert [(r.state, bool(r.reason)) for r in rows] == [("UNAVAILABLE", True)]


async def test_unparsable_config_is_internal(repo: Path) -> None:
    write_model(repo, "bad", 1, 1.0, config="max_batch_size: [[[\n")
    async with serving(repo, model_control_mode="explicit") as server:
        with pytest.raises(Internal):
            await server.dataplane.load_model("bad")
        state, reason = index_of(await server.dataplane.repository_index())[("bad", "")]
        assert state == "UNAVAILABLE" and reason


async def test_failed_reload_keeps_the_old_version_serving(repo: Path) -> None:
    model_dir = write_model(repo, "a", 1, 5.0)
    async with serving(repo, model_control_mode="explicit", load_models=("a",)) as server:
        (model_dir / "1" / "model.onnx").write_bytes(b"broken")
        with pytest.raises(InvalidArgument, match="load failed for model 'a'"):
            await server.dataplane.load_model("a")
        assert await added(server, "a") == 5.0
        assert index_of(await server.dataplane.repository_index())[("a", "1")][0] == "READY"


async def test_unchanged_load_is_a_no_op_and_changed_version_reloads_alone(repo: Path) -> None:
    write_model(repo, "a", 1, 1.0)
    write_model(repo, "a", 2, 2.0, config='backend: "onnxruntime"\nmax_batch_size: 8\n'
                'version_policy: { all: {} }\n')  # fmt: skip
    async with serving(repo, model_control_mode="explicit", load_models=("a",)) as server:
        dp = server.dataplane
        v1, v2 = dp.registry.find("a", 1), dp.registry.find("a", 2)
        await dp.load_model("a")
        assert dp.registry.find("a", 1) is v1 and dp.registry.find("a", 2) is v2
        write_model(repo, "a", 2, 20.0)
        await dp.load_model("a")
        assert dp.registry.find("a", 1) is v1
        assert dp.registry.find("a", 2) is not v2
        assert await added(server, "a", 2) == 20.0


async def test_reload_under_traffic_fails_no_request(repo: Path) -> None:
    write_model(repo, "a", 1, 1.0)
    async with serving(repo, model_control_mode="explicit", load_models=("a",)) as server:
        async with traffic(server, "a") as seen:
            await eventually(lambda: len(seen) >= 8, "traffic")
            write_model(repo, "a", 1, 2.0)
            await server.dataplane.load_model("a")
            count = len(seen)
            await eventually(lambda: len(seen) >= count + 8, "traffic after the reload")
    assert [s for s in seen if not isinstance(s, float)] == []
    assert seen[0] == 1.0 and seen[-1] == 2.0


# -- unload, dependents, UNLOADING ---------------------------------------------------------


async def test_unload_dependents_drops_models_loaded_only_as_dependencies(repo: Path) -> None:
    for name in ("top", "dep", "asked"):
        write_model(repo, name, 1, 1.0)
    async with serving(repo, model_control_mode="explicit", load_models=("top", "asked")) as server:
        control = server.dataplane.control
        await control.load("dep", dependency=True)
        control.record_dependencies("top", {"dep", "asked"})
        await server.dataplane.unload_model("top", unload_dependents=True)
        rows = index_of(await server.dataplane.repository_index())
        assert rows[("dep", "1")] == ("UNAVAILABLE", "unloaded")
        assert rows[("asked", "1")] == ("READY", "")  # loaded by name: stays
        await server.dataplane.load_model("top")
        await control.load("dep", dependency=True)
        control.record_dependencies("top", {"dep"})
        await server.dataplane.unload_model("top", unload_dependents=False)
        assert index_of(await server.dataplane.repository_index())[("dep", "1")][0] == "READY"


ENSEMBLE = """
platform: "ensemble"
max_batch_size: 8
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [4] }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [4] }]
ensemble_scheduling { step [
  { model_name: "a" model_version: -1
    input_map { key: "INPUT0" value: "INPUT0" } output_map { key: "OUTPUT0" value: "mid" } },
  { model_name: "b" model_version: -1
    input_map { key: "INPUT0" value: "mid" } output_map { key: "OUTPUT0" value: "OUTPUT0" } }
] }
"""


async def test_ensemble_load_brings_its_composing_models_and_unload_drops_them(
    repo: Path,
) -> None:
    write_model(repo, "a", 1, 1.0)
    write_model(repo, "b", 1, 10.0)
    (repo / "ens" / "1").mkdir(parents=True)
    (repo / "ens" / "config.pbtxt").write_text(ENSEMBLE)
    async with serving(repo, model_control_mode="explicit", load_models=("ens",)) as server:
        dp = server.dataplane
        assert await added(server, "ens") == 11.0
        await dp.unload_model("ens", unload_dependents=False)
        assert server.model_ready("a") and server.model_ready("b")
        await dp.load_model("ens")
        await dp.unload_model("ens", unload_dependents=True)
        rows = index_of(await dp.repository_index())
        assert rows[("a", "1")] == ("UNAVAILABLE", "unloaded")
        assert rows[("b", "1")] == ("UNAVAILABLE", "unloaded")


async def test_unloading_is_visible_while_requests_drain(repo: Path) -> None:
    write_gate_model(repo)
    gates = Gates()
    gates.load_open.set()
    async with serving(repo, gates, model_control_mode="explicit", load_models=("gate",)) as server:
        dp = server.dataplane
        request = asyncio.create_task(server.infer_async("gate", {"INPUT0": fp32([1, 2, 3, 4])}))
        await asyncio.to_thread(gates.executing.wait, WAIT_S)
        unload = asyncio.create_task(dp.unload_model("gate"))

        async def unloading() -> bool:
            return index_of(await dp.repository_index())[("gate", "1")][0] == "UNLOADING"

        await eventually(unloading, "UNLOADING in the index")
        gates.execute_open.set()
        assert list((await request)["OUTPUT0"]) == [1, 2, 3, 4]
        await unload
        assert index_of(await dp.repository_index())[("gate", "1")] == ("UNAVAILABLE", "unloaded")


# -- concurrency -------------------------------------------------------------------------------


async def test_a_slow_load_does_not_block_other_models(repo: Path) -> None:
    write_model(repo, "fast", 1, 4.0)
    write_gate_model(repo)
    gates = Gates()
    async with serving(repo, gates, model_control_mode="explicit", load_models=("fast",)) as server:
        load = asyncio.create_task(server.dataplane.load_model("gate"))
        await asyncio.to_thread(gates.loading.wait, WAIT_S)
        assert await added(server, "fast") == 4.0
        rows = index_of(await server.dataplane.repository_index())
        assert rows[("gate", "1")][0] == "LOADING"
        gates.load_open.set()
        await load
        assert server.model_ready("gate")


async def test_loads_of_one_model_run_one_at_a_time(repo: Path) -> None:
    write_gate_model(repo)
    gates = Gates()
    config = json.dumps({"backend": "gate", "max_batch_size": 0,
                         "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4]}],
                         "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]}],
                         "instance_group": [{"kind": "KIND_CPU", "count": 1}]})  # fmt: skip
    async with serving(repo, gates, model_control_mode="explicit") as server:
        dp = server.dataplane
        first = asyncio.create_task(dp.load_model("gate", config))
        await asyncio.to_thread(gates.loading.wait, WAIT_S)
        second = asyncio.create_task(dp.load_model("gate", config))
        lock = dp.control._lock("gate")
        await eventually(lambda: bool(getattr(lock, "_waiters", None)), "the second load to queue")
        gates.load_open.set()
        await asyncio.gather(first, second)
        assert gates.max_active_loads == 1


# -- polling -------------------------------------------------------------------------------------


async def test_poll_adds_changes_and_removes_models(repo: Path) -> None:
    write_model(repo, "a", 1, 1.0)
    write_model(repo, "gone", 1, 1.0)
    async with serving(repo, model_control_mode="poll", repository_poll_secs=3600) as server:
        control = server.dataplane.control
        assert (await control.poll()).load == {}
        write_model(repo, "new", 1, 6.0)
        write_model(repo, "a", 2, 2.0)
        for path in sorted((repo / "gone").rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        (repo / "gone").rmdir()
        plan = await control.poll()
        assert sorted(plan.load) == ["a", "new"] and plan.unload == ["gone"]
        assert await added(server, "new") == 6.0
        assert await added(server, "a") == 2.0
        rows = index_of(await server.dataplane.repository_index())
        assert rows[("a", "2")] == ("READY", "")
        assert rows.get(("a", "1"), ("UNAVAILABLE", "unloaded")) == ("UNAVAILABLE", "unloaded")
        assert not any(name == "gone" for name, _ in rows)


async def test_poll_reloads_only_changed_versions_and_config_changes_reload_all(repo: Path) -> None:
    config = 'backend: "onnxruntime"\nmax_batch_size: 8\nversion_policy: { all: {} }\n'
    write_model(repo, "a", 1, 1.0, config=config)
    write_model(repo, "a", 2, 2.0)
    async with serving(repo, model_control_mode="poll", repository_poll_secs=3600) as server:
        dp = server.dataplane
        v1 = dp.registry.find("a", 1)
        write_model(repo, "a", 2, 22.0)
        await dp.control.poll()
        assert dp.registry.find("a", 1) is v1
        assert await added(server, "a", 2) == 22.0
        (repo / "a" / "config.pbtxt").write_text(config.replace("8", "4"))
        await dp.control.poll()
        assert dp.registry.find("a", 1) is not v1
        assert dp.model_config("a").max_batch_size == 4


async def test_poll_picks_up_a_new_version_under_traffic(repo: Path) -> None:
    write_model(repo, "a", 1, 1.0)
    async with serving(repo, model_control_mode="poll", repository_poll_secs=0.05) as server:
        async with traffic(server, "a") as seen:
            await eventually(lambda: len(seen) >= 8, "traffic")
            write_model(repo, "a", 2, 2.0)
            await eventually(lambda: bool(seen) and seen[-1] == 2.0, "version 2 serving")

            async def v1_gone() -> bool:
                rows = index_of(await server.dataplane.repository_index())
                return rows.get(("a", "1"), ("UNAVAILABLE",))[0] == "UNAVAILABLE"

            await eventually(v1_gone, "version 1 unloaded")
            count = len(seen)
            await eventually(lambda: len(seen) >= count + 8, "traffic after the switch")
    assert [s for s in seen if not isinstance(s, float)] == []


async def test_poll_does_not_retry_an_unchanged_failure(repo: Path) -> None:
    model_dir = write_model(repo, "bad", 1, 1.0)
    (model_dir / "1" / "model.onnx").write_bytes(b"broken")
    async with serving(repo, model_control_mode="poll", repository_poll_secs=3600) as server:
        assert not (await server.dataplane.control.poll())
        write_model(repo, "bad", 1, 9.0)
        assert "bad" in (await server.dataplane.control.poll()).load
        assert await added(server, "bad") == 9.0


# -- over the wire: tritonclient, HTTP and gRPC ---------------------------------------------


def clients(server: Server) -> list[Any]:
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    return [
        httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}"),
        grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}"),
    ]


def wire_added(client: Any, name: str, version: str = "") -> float:
    """``added`` through a tritonclient (either protocol)."""
    module = __import__(type(client).__module__.rsplit(".", 1)[0], fromlist=["InferInput"])
    inp = module.InferInput("INPUT0", [1, 4], "FP32")
    inp.set_data_from_numpy(fp32(X))
    return float(client.infer(name, [inp], model_version=version).as_numpy("OUTPUT0")[0][0]) - 1.0


def wire_index(client: Any) -> dict[tuple[str, str], str]:
    rows = client.get_model_repository_index()
    if not isinstance(rows, list):  # gRPC: a message
        rows = [{"name": m.name, "version": m.version, "state": m.state} for m in rows.models]
    return {(r["name"], r.get("version", "")): r.get("state", "") for r in rows}


def test_wire_poll_picks_up_a_new_version_with_no_failed_request(repo: Path, serve: Any) -> None:
    import threading

    write_model(repo, "a", 1, 1.0)
    server = serve(repo, http=True, grpc=True, model_control_mode="poll", repository_poll_secs=0.05)
    stop = threading.Event()
    seen: list[list[Any]] = [[], []]

    def client_loop(index: int) -> None:
        client = clients(server)[index]
        with client:
            while not stop.is_set():
                try:
                    seen[index].append(wire_added(client, "a"))
                except Exception as exc:  # any failure is what the test looks for
                    seen[index].append(exc)

    threads = [threading.Thread(target=client_loop, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    try:
        deadline = time.monotonic() + WAIT_S
        while not all(len(s) >= 4 for s in seen):
            assert time.monotonic() < deadline, "no traffic"
            time.sleep(0.01)  # bounded poll of the client threads' progress
        write_model(repo, "a", 2, 2.0)
        while not all(s and s[-1] == 2.0 for s in seen):
            assert time.monotonic() < deadline, f"version 2 never served: {seen[0][-3:]}"
            time.sleep(0.01)
    finally:
        stop.set()
        for thread in threads:
            thread.join(WAIT_S)
    for results in seen:
        assert [r for r in results if not isinstance(r, float)] == []
    for client in clients(server):
        with client:
            assert wire_index(client)[("a", "2")] == "READY"


def test_wire_explicit_load_with_overrides_and_unload(repo: Path, serve: Any) -> None:
    from tritonclient.utils import InferenceServerException

    write_model(repo, "a", 1, 1.0)
    write_model(repo, "a", 2, 2.0)
    server = serve(repo, http=True, grpc=True, model_control_mode="explicit")
    override = json.dumps({"backend": "onnxruntime", "max_batch_size": 8,
                           "version_policy": {"specific": {"versions": [1]}}})  # fmt: skip
    for offset, client in enumerate(clients(server)):
        with client:
            if offset == 0:
                assert wire_index(client)[("a", "")] == ""  # never loaded: name only
            client.load_model("a")
            assert wire_added(client, "a") == 2.0
            client.load_model("a", config=override)
            assert wire_added(client, "a") == 1.0
            onnx_file = add_const_bytes(30.0 + offset)
            client.load_model("fresh", config=override, files={"file:1/model.onnx": onnx_file})
            assert wire_added(client, "fresh") == 30.0 + offset
            client.unload_model("fresh")
            client.unload_model("a")
            states = wire_index(client)
            assert states[("a", "1")] == "UNAVAILABLE" and states[("fresh", "1")] == "UNAVAILABLE"
            with pytest.raises(InferenceServerException):
                wire_added(client, "a")
            with pytest.raises(InferenceServerException, match="failed to poll"):
                client.load_model("nope")


def test_wire_load_refused_in_none_mode(repo: Path, serve: Any) -> None:
    from tritonclient.utils import InferenceServerException

    write_model(repo, "a", 1, 1.0)
    server = serve(repo, http=True, grpc=True)
    for client in clients(server):
        with client:
            for call in (client.load_model, client.unload_model):
                with pytest.raises(InferenceServerException, match="polling is enabled"):
                    call("a")
