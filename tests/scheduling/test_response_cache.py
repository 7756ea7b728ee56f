"""The response cache: hits skip execution and are counted as Triton counts them."""

from __future__ import annotations

import numpy as np
import pytest
from scheduling_helpers import Recorder, make_server, request, stats, write_model

from naiad.core import datatypes
from naiad.core.types import InferenceRequest, InferInput, OutputTensor, RequestedOutput
from naiad.engine.cache import ResponseCache, parse_size

pytestmark = pytest.mark.unit

CACHED = "response_cache { enable: true }\n"
CACHE = {"local": {"size": "1MB"}}


async def test_a_repeated_request_is_answered_from_the_cache(repo):
    write_model(repo, "m", CACHED)
    rec = Recorder()
    async with make_server(repo, rec, cache_config=CACHE) as server:
        first = await server.dataplane.infer(request("m", "a", 3.0))
        second = await server.dataplane.infer(request("m", "b", 3.0))
        other = await server.dataplane.infer(request("m", "c", 4.0))
        assert rec.served() == [["a"], ["c"]]  # "b" never executed
        np.testing.assert_array_equal(second.as_numpy("OUTPUT0"), first.as_numpy("OUTPUT0"))
        assert second.id == "b"
        np.testing.assert_array_equal(other.as_numpy("OUTPUT0"), np.full((1, 4), 8.0))
        s = stats(server, "m")
        infer_stats = s["inference_stats"]
        assert (infer_stats["cache_hit"]["count"], infer_stats["cache_miss"]["count"]) == (1, 2)
        assert infer_stats["success"]["count"] == 3  # hits are successes
        assert infer_stats["queue"]["count"] == 3
        assert infer_stats["compute_infer"]["count"] == 2  # ...but not executions
        assert (s["inference_count"], s["execution_count"]) == (2, 2)
        assert infer_stats["cache_miss"]["ns"] > 0


async def test_requests_for_different_outputs_share_an_entry(repo):
    write_model(repo, "m", CACHED)
    rec = Recorder()
    async with make_server(repo, rec, cache_config=CACHE) as server:
        await server.dataplane.infer(request("m", "a"))
        req = request("m", "b")
        req.outputs = [RequestedOutput("OUTPUT0")]
        response = await server.dataplane.infer(req)
        assert [o.name for o in response.outputs] == ["OUTPUT0"]
        assert rec.served() == [["a"]]


async def test_no_cache_without_the_server_cache_or_the_model_flag(repo):
    write_model(repo, "on", CACHED)
    write_model(repo, "off")
    rec = Recorder()
    async with make_server(repo, rec) as server:  # no --cache-config
        for rid in ("a", "b"):
            await server.dataplane.infer(request("on", rid))
        assert len(rec.served()) == 2
    rec = Recorder()
    async with make_server(repo, rec, cache_config=CACHE) as server:
        for rid in ("a", "b"):
            await server.dataplane.infer(request("off", rid))
        assert len(rec.served()) == 2
        assert stats(server, "off")["inference_stats"]["cache_miss"]["count"] == 0


def _request(value: int) -> InferenceRequest:
    data = np.full((1, 4), value, np.int32)
    return InferenceRequest("m", [InferInput("X", datatypes.INT32, (1, 4), data)])


def test_lru_eviction_is_bounded_by_bytes():
    outputs = [OutputTensor("Y", datatypes.FP32, (256,), np.zeros(256, np.float32))]
    entry = 1024 + 64
    cache = ResponseCache(entry * 2)
    keys = [ResponseCache.key("m", 1, _request(i)) for i in range(3)]
    cache.insert(keys[0], outputs)
    cache.insert(keys[1], outputs)
    assert cache.lookup(keys[0]) is not None  # 0 is now the most recent
    cache.insert(keys[2], outputs)
    assert cache.lookup(keys[1]) is None
    assert cache.lookup(keys[0]) is not None and cache.lookup(keys[2]) is not None
    assert cache.used == 2 * entry
    cached = cache.lookup(keys[0])
    assert cached is not None and not cached[0].data.flags.writeable


def test_keys_cover_model_version_and_every_input_property():
    base = ResponseCache.key("m", 1, _request(1))
    assert base == ResponseCache.key("m", 1, _request(1))
    assert base != ResponseCache.key("m", 2, _request(1))
    assert base != ResponseCache.key("n", 1, _request(1))
    assert base != ResponseCache.key("m", 1, _request(2))
    reshaped = _request(1)
    reshaped.inputs[0].data = reshaped.inputs[0].array().reshape(4, 1)
    reshaped.inputs[0].shape = (4, 1)
    assert base != ResponseCache.key("m", 1, reshaped)
    strings = InferenceRequest(
        "m", [InferInput("S", datatypes.BYTES, (2,), np.array([b"a", b"bc"], dtype=object))]
    )
    assert ResponseCache.key("m", 1, strings) != ResponseCache.key("m", 1, _request(1))


def test_sizes():
    assert parse_size("1048576") == 1 << 20
    assert parse_size("16MB") == 16 << 20
    assert parse_size("2k") == 2048
