"""Slots, filler rows and the backlog, observed with the recording backend."""

from __future__ import annotations

import pytest
from scheduling_helpers import Recorder, infer, make_server, request, until, write_model

from naiad.core.types import InferenceRequest

pytestmark = pytest.mark.unit

READY = """
sequence_batching {
  direct { }
  control_input [{ name: "READY" control [{ kind: CONTROL_SEQUENCE_READY
                                            int32_false_true: [0, 1] }] }]
}
instance_group [{ kind: KIND_CPU count: 1 }]
"""

PLAIN = """
sequence_batching { direct { } }
instance_group [{ kind: KIND_CPU count: 1 }]
"""


def seq(rid: str, cid: int, *, start: bool = False, end: bool = False, batching: bool = True
        ) -> InferenceRequest:  # fmt: skip
    req = request("rec", rid, batching=batching)
    req.correlation_id = cid
    req.sequence_start = start
    req.sequence_end = end
    return req


async def test_direct_rows_are_slots_with_fillers(repo):
    """Row k is slot k; a slot without a ready request is a READY=false filler row."""
    rec = Recorder(hold_first=True)
    write_model(repo, "rec", READY, max_batch_size=4)
    async with make_server(repo, rec) as server:
        a1 = infer(server, seq("a1", 1, start=True))
        await until(lambda: len(rec.batches) == 1, "a1 running")
        b1 = infer(server, seq("b1", 2, start=True))
        a2 = infer(server, seq("a2", 1))
        rec.release.set()
        await a1
        await b1
        await a2
        await infer(server, seq("b2", 2))
    assert rec.served() == [["a1"], ["a2", "b1"], ["", "b2"]]


async def test_without_ready_control_rows_are_packed(repo):
    rec = Recorder()
    write_model(repo, "rec", PLAIN, max_batch_size=4)
    async with make_server(repo, rec) as server:
        await infer(server, seq("a1", 1, start=True))
        await infer(server, seq("b1", 2, start=True))
        await infer(server, seq("b2", 2))
    assert rec.served() == [["a1"], ["b1"], ["b2"]]


async def test_backlog_waits_for_a_free_slot(repo):
    """One instance without batching has one slot: B waits until A ends."""
    rec = Recorder()
    write_model(repo, "rec", PLAIN, max_batch_size=0)
    async with make_server(repo, rec) as server:
        await infer(server, seq("a1", 1, start=True, batching=False))
        b1 = infer(server, seq("b1", 2, start=True, batching=False))
        batcher = server.dataplane.registry.get("rec").scheduler
        await until(lambda: len(batcher.table.backlog) == 1, "b in the backlog")
        assert not b1.done()
        await infer(server, seq("a2", 1, end=True, batching=False))
        await b1
    assert rec.served() == [["a1"], ["a2"], ["b1"]]
