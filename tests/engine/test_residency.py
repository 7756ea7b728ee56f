"""Residency (engine/residency.py) with real servers and real clients: models load on their
first request and the least recently used idle ones are unloaded to fit the budget; the
races (one load for many waiters, a failing load, a model busy or unloading when a request
comes, an ensemble's step) answer every request right and keep the budget."""

from __future__ import annotations

import json
import queue
import random
import shutil
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from engine.residency_models import (
    PINNED,
    MiB,
    X,
    ensemble,
    infer_grpc,
    infer_http,
    metric,
    python_model,
    residency,
    states,
)
from support.served import Served, naiad_serve
from tritonclient.utils import InferenceServerException

pytestmark = pytest.mark.protocol

SIZE = 16 * MiB


def wait_for(check: object, what: str, timeout: float = 30) -> None:
    """Until ``check()`` is true (polling the server's own answers)."""
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class Watch:
    """Samples the residency view every 20 ms while clients run: the most memory the loaded
    models held, and the most models loaded at once."""

    def __init__(self, served: Served) -> None:
        self.served = served
        self.most_bytes = 0
        self.most_loaded = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            view = residency(self.served.http_port)
            loaded = [m for m in view["models"] if m["state"] == "loaded"]
            self.most_bytes = max(self.most_bytes, view["used_bytes"])
            self.most_loaded = max(self.most_loaded, len(loaded))
            self.samples += 1
            time.sleep(0.02)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def test_twenty_models_under_a_budget_that_fits_five(tmp_path: Path) -> None:
    for k in range(20):
        python_model(tmp_path, f"m{k:02d}", k)
    budget = 5 * SIZE + SIZE // 2
    with naiad_serve(tmp_path, "--model-memory-budget", str(budget)) as served:
        assert set(states(served.http_port).values()) == {"not loaded"}  # nothing at start
        base_mb = served.rss_mb()
        rng = random.Random(7)
        order = [rng.randrange(20) for _ in range(160)]

        def ask(i: int) -> tuple[int, np.ndarray]:
            k = order[i]
            infer = infer_http if i % 2 else infer_grpc
            port = served.http_port if i % 2 else served.grpc_port
            return k, infer(port, f"m{k:02d}")

        with Watch(served) as watch, ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(ask, range(len(order))))
        for k, answer in answers:
            np.testing.assert_array_equal(answer, X + k)
        assert watch.samples > 10
        assert watch.most_bytes <= budget, served.output()[-8000:]
        assert watch.most_loaded <= 5, served.output()[-6000:]
        # What the process holds, not only what was counted: at most the budget above
        # what it held with no model loaded (allocator slack and buffers aside).
        assert served.peak_mb() - base_mb <= budget / MiB + 32

        loads = metric(served.metrics_port, "naiad_model_load_count")
        evictions = metric(served.metrics_port, "naiad_model_eviction_count")
        waits = metric(served.metrics_port, "naiad_model_load_wait_count")
        assert len(loads) == len(set(order)) and sum(loads.values()) >= len(set(order))
        assert sum(evictions.values()) >= sum(loads.values()) - 5
        assert all('reason="budget"' in labels for labels in evictions)
        assert sum(waits.values()) >= sum(loads.values())
        assert metric(served.metrics_port, "naiad_model_residency_budget_bytes") == {"": budget}

        index = httpclient.InferenceServerClient(f"127.0.0.1:{served.http_port}")
        rows = index.get_model_repository_index()
        index.close()
        evicted = [r for r in rows if r.get("state") == "UNAVAILABLE"]
        assert evicted and all(
            r["reason"] == "unloaded: least recently used, to fit the memory budget"
            for r in evicted
        )
        assert sum(r.get("state") == "READY" for r in rows) <= 5


def test_requests_for_a_loading_model_share_its_one_load(tmp_path: Path) -> None:
    python_model(tmp_path, "slow", 3, load_s=1.0)
    with naiad_serve(tmp_path, "--model-memory-budget", "1GiB") as served:
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda i: infer_http(served.http_port, "slow"), range(8)))
        for answer in answers:
            np.testing.assert_array_equal(answer, X + 3)
        assert metric(served.metrics_port, "naiad_model_load_count") == {'model="slow"': 1}
        assert metric(served.metrics_port, "naiad_model_load_wait_count") == {'model="slow"': 8}
        waited = metric(served.metrics_port, "naiad_model_load_wait_duration_us")
        assert waited['model="slow"'] > 0
        # The wait is the requests' queue time, as Triton counts a wait for its model.
        client = httpclient.InferenceServerClient(f"127.0.0.1:{served.http_port}")
        stats = client.get_inference_statistics("slow")["model_stats"][0]["inference_stats"]
        client.close()
        assert stats["queue"]["count"] == 8
        assert stats["queue"]["ns"] >= waited['model="slow"'] * 1000 * 0.9


def test_a_failing_load_fails_each_waiter_once_until_its_files_change(tmp_path: Path) -> None:
    python_model(tmp_path, "broken", 1, load_s=0.5, fails=True)
    python_model(tmp_path, "fine", 2)
    with naiad_serve(tmp_path, "--model-memory-budget", "1GiB") as served:

        def ask(i: int) -> str:
            try:
                infer_http(served.http_port, "broken")
            except InferenceServerException as exc:
                return str(exc)
            return "answered"

        with ThreadPoolExecutor(5) as pool:
            errors = list(pool.map(ask, range(5)))
        assert all("load failed for model 'broken'" in e for e in errors), errors
        assert all("this model cannot load" in e for e in errors)
        assert ask(5) == errors[0]  # no second attempt: the same error
        failures = metric(served.metrics_port, "naiad_model_load_failure_count")
        assert failures['model="broken"'] == 1
        assert states(served.http_port)["broken"] == "failed"
        np.testing.assert_array_equal(infer_grpc(served.grpc_port, "fine"), X + 2)

        python_model(tmp_path, "broken", 1)  # fixed on disk: the next request loads it
        np.testing.assert_array_equal(infer_http(served.http_port, "broken"), X + 1)
        assert metric(served.metrics_port, "naiad_model_load_count")['model="broken"'] == 1


def test_a_busy_model_is_not_unloaded_the_new_load_waits_for_it(tmp_path: Path) -> None:
    python_model(tmp_path, "busy", 1, run_s=1.5)
    python_model(tmp_path, "next", 2)
    budget = SIZE + SIZE // 2  # one model
    with naiad_serve(tmp_path, "--model-memory-budget", str(budget)) as served:
        infer_http(served.http_port, "busy")  # loaded, then idle
        with ThreadPoolExecutor(2) as pool:
            running = pool.submit(infer_http, served.http_port, "busy")
            wait_for(
                lambda: (
                    residency(served.http_port)["models"][0]["state"] == "loaded"
                    and _pending(served, "busy")
                ),
                "the request to run",
            )
            coming = pool.submit(infer_grpc, served.grpc_port, "next")
            with Watch(served) as watch:
                np.testing.assert_array_equal(running.result(), X + 1)
                np.testing.assert_array_equal(coming.result(), X + 2)
        assert watch.most_bytes <= budget, served.output()[-8000:]
        assert states(served.http_port) == {"busy": "unloaded", "next": "loaded"}


def _pending(served: Served, model: str) -> bool:
    live = metric(served.metrics_port, "nv_inference_pending_request_count")
    executing = metric(served.metrics_port, "nv_inference_exec_count")
    return bool(live) and executing.get(f'model="{model}",version="1"', 0) >= 1


def test_a_request_during_its_models_unload_waits_and_loads_it_again(tmp_path: Path) -> None:
    python_model(tmp_path, "a", 1, unload_s=1.0)
    python_model(tmp_path, "b", 2)
    budget = SIZE + SIZE // 2
    with naiad_serve(tmp_path, "--model-memory-budget", str(budget)) as served:
        infer_http(served.http_port, "a")
        with ThreadPoolExecutor(2) as pool:
            b = pool.submit(infer_http, served.http_port, "b")  # unloads a (a 1 s finalize)
            wait_for(lambda: states(served.http_port)["a"] == "unloading", "a to unload")
            again = pool.submit(infer_grpc, served.grpc_port, "a")
            np.testing.assert_array_equal(b.result(), X + 2)
            np.testing.assert_array_equal(again.result(), X + 1)
        loads = metric(served.metrics_port, "naiad_model_load_count")
        assert loads['model="a"'] == 2
        evictions = metric(served.metrics_port, "naiad_model_eviction_count")
        assert evictions['model="a",reason="budget"'] >= 1


def test_an_ensembles_step_stays_while_the_ensemble_is_loaded(tmp_path: Path) -> None:
    python_model(tmp_path, "step", 5)
    python_model(tmp_path, "other", 6)
    ensemble(tmp_path, "pipeline", "step")
    budget = SIZE + SIZE // 2  # one Python model
    with naiad_serve(tmp_path, "--model-memory-budget", str(budget)) as served:
        for model, k in [("pipeline", 5), ("other", 6), ("pipeline", 5), ("step", 5)]:
            infer = infer_http if model != "step" else infer_grpc
            port = served.http_port if model != "step" else served.grpc_port
            np.testing.assert_array_equal(infer(port, model), X + k)
            seen = states(served.http_port)
            if seen["pipeline"] == "loaded":
                assert seen["step"] == "loaded"
        # For "other", the ensemble went first (nothing else could make room), its step after.
        evictions = metric(served.metrics_port, "naiad_model_eviction_count")
        assert evictions['model="pipeline",reason="budget"'] >= 1
        assert evictions['model="step",reason="budget"'] >= 1


def test_pinned_models_load_at_start_and_stay(tmp_path: Path) -> None:
    python_model(tmp_path, "pinned_by_config", 1, extra=PINNED)
    python_model(tmp_path, "pinned_by_flag", 2)
    for k in range(3):
        python_model(tmp_path, f"m{k}", 10 + k)
    budget = 3 * SIZE + SIZE // 2
    flags = ("--model-memory-budget", str(budget), "--model-pin", "pinned_by_flag")
    with naiad_serve(tmp_path, *flags) as served:
        seen = states(served.http_port)
        assert seen["pinned_by_config"] == seen["pinned_by_flag"] == "loaded"
        for k in [0, 1, 2, 0, 2]:
            np.testing.assert_array_equal(infer_http(served.http_port, f"m{k}"), X + 10 + k)
        view = residency(served.http_port)
        by_name = {m["name"]: m for m in view["models"]}
        assert by_name["pinned_by_config"]["state"] == "loaded"
        assert by_name["pinned_by_config"]["pinned"] and by_name["pinned_by_flag"]["pinned"]
        assert by_name["pinned_by_flag"]["evictions"] == {}
        assert view["used_bytes"] <= budget


def test_idle_models_are_unloaded_and_come_back(tmp_path: Path) -> None:
    python_model(tmp_path, "idle", 4)
    with naiad_serve(tmp_path, "--model-idle-unload-secs", "0.5") as served:
        np.testing.assert_array_equal(infer_http(served.http_port, "idle"), X + 4)
        wait_for(lambda: states(served.http_port)["idle"] == "unloaded", "the idle unload")
        client = httpclient.InferenceServerClient(f"127.0.0.1:{served.http_port}")
        (row,) = client.get_model_repository_index()
        assert row["reason"] == "unloaded: idle for 0.5 s"
        # Metadata and config are answered from what is known: no load for them.
        assert client.get_model_metadata("idle")["inputs"][0]["name"] == "INPUT0"
        assert client.get_model_config("idle")["input"][0]["name"] == "INPUT0"
        assert states(served.http_port)["idle"] == "unloaded"
        client.close()
        np.testing.assert_array_equal(infer_grpc(served.grpc_port, "idle"), X + 4)
        evictions = metric(served.metrics_port, "naiad_model_eviction_count")
        assert evictions == {'model="idle",reason="idle"': 1}


def test_explicit_unload_wins_until_an_explicit_load(tmp_path: Path) -> None:
    for k in range(3):
        python_model(tmp_path, f"m{k}", k)
    budget = SIZE + SIZE // 2
    flags = ("--model-control-mode", "explicit", "--model-memory-budget", str(budget))
    with naiad_serve(tmp_path, *flags) as served:
        np.testing.assert_array_equal(infer_http(served.http_port, "m0"), X)  # on demand
        client = httpclient.InferenceServerClient(f"127.0.0.1:{served.http_port}")
        client.unload_model("m0")
        with pytest.raises(InferenceServerException, match="m0"):
            infer_http(served.http_port, "m0")
        client.load_model("m1")
        client.load_model("m0")  # explicit: loads though the budget fits one; m1 goes
        np.testing.assert_array_equal(infer_grpc(served.grpc_port, "m0"), X)
        wait_for(lambda: residency(served.http_port)["used_bytes"] <= budget, "the budget")
        client.close()


def test_workers_each_keep_their_share(tmp_path: Path) -> None:
    for k in range(6):
        python_model(tmp_path, f"m{k}", k)
    budget = 4 * SIZE + SIZE  # two models per worker
    flags = ("--workers", "2", "--model-memory-budget", str(budget))
    with naiad_serve(tmp_path, *flags) as served:
        rng = random.Random(3)
        order = [rng.randrange(6) for _ in range(60)]

        def ask(i: int) -> tuple[int, np.ndarray]:
            infer = infer_http if i % 2 else infer_grpc
            port = served.http_port if i % 2 else served.grpc_port
            return order[i], infer(port, f"m{order[i]}")

        with ThreadPoolExecutor(4) as pool:
            for k, answer in pool.map(ask, range(len(order))):
                np.testing.assert_array_equal(answer, X + k)
        # The metrics port sums the workers: their shares make the budget.
        assert metric(served.metrics_port, "naiad_model_residency_budget_bytes") == {"": budget}
        assert metric(served.metrics_port, "naiad_model_residency_bytes")[""] <= budget
        assert sum(metric(served.metrics_port, "naiad_model_eviction_count").values()) > 0


def test_a_model_bigger_than_the_budget_loads_alone_without_waiting_for_room(
    tmp_path: Path,
) -> None:
    python_model(tmp_path, "a", 1)
    python_model(tmp_path, "b", 2)
    with naiad_serve(tmp_path, "--model-memory-budget", "1") as served:
        for model, k in [("a", 1), ("b", 2), ("a", 1)]:
            np.testing.assert_array_equal(infer_http(served.http_port, model), X + k)
        assert states(served.http_port) == {"a": "loaded", "b": "unloaded"}
        # Nothing could ever make room: no load waited for any (ROOM_WAIT_S is 30 s).
        waited = metric(served.metrics_port, "naiad_model_load_wait_duration_us")
        assert max(waited.values()) < 10_000_000
        assert "over the memory budget" in served.output()


def test_two_loads_racing_for_the_last_memory_take_turns(tmp_path: Path) -> None:
    for name, k in [("first", 0), ("b", 1), ("c", 2)]:
        python_model(tmp_path, name, k, load_s=0.3 if name != "first" else 0)
    budget = SIZE + SIZE // 2  # one model
    with naiad_serve(tmp_path, "--model-memory-budget", str(budget)) as served:
        infer_http(served.http_port, "first")  # measured: later loads know what to expect
        with Watch(served) as watch, ThreadPoolExecutor(2) as pool:
            b = pool.submit(infer_http, served.http_port, "b")
            c = pool.submit(infer_grpc, served.grpc_port, "c")
            np.testing.assert_array_equal(b.result(), X + 1)
            np.testing.assert_array_equal(c.result(), X + 2)
        assert watch.most_bytes <= budget, served.output()[-8000:]
        assert watch.most_loaded <= 1, served.output()[-8000:]
        loads = metric(served.metrics_port, "naiad_model_load_count")
        assert loads == {'model="first"': 1, 'model="b"': 1, 'model="c"': 1}


def test_metadata_and_config_of_a_model_never_loaded_need_no_load(tmp_path: Path) -> None:
    python_model(tmp_path, "cold", 7)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.pbtxt").write_text("this is not a config")
    with naiad_serve(tmp_path, "--model-memory-budget", "1GiB") as served:
        client = httpclient.InferenceServerClient(f"127.0.0.1:{served.http_port}")
        try:
            metadata = client.get_model_metadata("cold")
            assert (metadata["versions"], metadata["inputs"][0]["shape"]) == (["1"], [4])
            assert client.get_model_config("cold")["backend"] == "python"
            assert not client.is_model_ready("cold")
            assert states(served.http_port)["cold"] == "not loaded"
            with pytest.raises(InferenceServerException, match="broken"):
                client.get_model_metadata("broken")  # its config's own error
            # gRPC asks the same, then a request loads it.
            grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{served.grpc_port}")
            assert grpc.get_model_metadata("cold").inputs[0].name == "INPUT0"
            grpc.close()
            np.testing.assert_array_equal(infer_grpc(served.grpc_port, "cold"), X + 7)
            assert metric(served.metrics_port, "naiad_model_load_count") == {'model="cold"': 1}
        finally:
            client.close()


def test_under_workers_a_failing_load_and_an_explicit_unload_hold_in_every_worker(
    tmp_path: Path,
) -> None:
    python_model(tmp_path, "broken", 1, fails=True)
    python_model(tmp_path, "m", 2)
    flags = ("--workers", "2", "--model-control-mode", "explicit")
    flags += ("--model-memory-budget", str(4 * SIZE))
    with naiad_serve(tmp_path, *flags) as served:
        with ThreadPoolExecutor(6) as pool:  # spread over both workers' connections
            answers = list(pool.map(lambda i: infer_http(served.http_port, "m"), range(6)))
            for answer in answers:
                np.testing.assert_array_equal(answer, X + 2)

            def broken(i: int) -> str:
                try:
                    (infer_http if i % 2 else infer_grpc)(
                        served.http_port if i % 2 else served.grpc_port, "broken"
                    )
                except InferenceServerException as exc:
                    return str(exc)
                return "answered"

            errors = list(pool.map(broken, range(6)))
        assert all("this model cannot load" in e for e in errors), errors
        failures = metric(served.metrics_port, "naiad_model_load_failure_count")
        assert 1 <= failures['model="broken"'] <= 2  # once per worker at most
        client = httpclient.InferenceServerClient(f"127.0.0.1:{served.http_port}")
        client.unload_model("m")  # explicit: every worker, and it stays unloaded
        client.close()
        for i in range(6):
            with pytest.raises(InferenceServerException, match="'m'"):
                (infer_http if i % 2 else infer_grpc)(
                    served.http_port if i % 2 else served.grpc_port, "m"
                )


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    """The bundled example repository (BLS and a decoupled model among them)."""
    repo = tmp_path / "examples"
    shutil.copytree(Path(__file__).parents[2] / "examples" / "model_repository", repo)
    return repo


def test_bls_and_grpc_streams_reach_models_that_are_not_loaded(examples: Path) -> None:
    with naiad_serve(examples, "--model-memory-budget", "1GiB") as served:
        # BLS from a model loaded on demand to models not loaded yet.
        client = httpclient.InferenceServerClient(f"127.0.0.1:{served.http_port}")
        inputs = []
        for name, value in (("INPUT0", np.arange(4)), ("INPUT1", np.ones(4))):
            tensor = httpclient.InferInput(name, [4], "FP32")
            tensor.set_data_from_numpy(value.astype(np.float32))
            inputs.append(tensor)
        result = client.infer("bls", inputs)
        client.close()
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), np.arange(4) + 1)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), np.arange(4) - 1)

        # Triton's generate endpoint reads the body against the inputs of a model not loaded.
        body = json.dumps({"TEXT": ["naiad"]}).encode()
        url = f"http://127.0.0.1:{served.http_port}/v2/models/string_upper/generate"
        with urllib.request.urlopen(urllib.request.Request(url, data=body)) as answer:
            assert json.loads(answer.read())["UPPER"] == "NAIAD"

        # One gRPC stream: a decoupled model and an ordinary one, neither loaded.
        stream = grpcclient.InferenceServerClient(f"127.0.0.1:{served.grpc_port}")
        results: queue.Queue[Any] = queue.Queue()
        stream.start_stream(callback=lambda result, error: results.put((result, error)))
        try:
            values = grpcclient.InferInput("IN", [3], "INT32")
            values.set_data_from_numpy(np.array([7, 8, 9], dtype=np.int32))
            stream.async_stream_infer("repeat", [values], request_id="r")
            identity = grpcclient.InferInput("INPUT0", [1, 4], "FP32")
            identity.set_data_from_numpy(np.ones((1, 4), dtype=np.float32))
            stream.async_stream_infer("identity", [identity], request_id="i")
            seen: dict[str, list[Any]] = {"r": [], "i": []}
            while len(seen["r"]) < 3 or not seen["i"]:
                result, error = results.get(timeout=60)
                assert error is None, error
                response = result.get_response()
                name = "OUT" if response.id == "r" else "OUTPUT0"
                seen[response.id].append(result.as_numpy(name).tolist())
        finally:
            stream.stop_stream()
            stream.close()
        assert seen == {"r": [[7], [8], [9]], "i": [[[1.0] * 4]]}
