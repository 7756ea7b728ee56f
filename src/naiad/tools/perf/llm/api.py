"""An LLM sweep as a function: every level in turn, each level's result as it comes."""

from __future__ import annotations

from collections.abc import Callable

from naiad.tools.perf.llm.figures import LevelResult
from naiad.tools.perf.llm.load import LlmLoad
from naiad.tools.perf.llm.measure import measure_level
from naiad.tools.perf.llm.prompts import prompts
from naiad.tools.perf.llm.settings import LlmSettings
from naiad.tools.perf.llm.streams import Transport
from naiad.tools.perf.settings import PerfSettings


def make_transport(perf: PerfSettings, llm: LlmSettings) -> Transport:
    """The transport ``--endpoint-type`` names, with the prompts to send (not open yet)."""
    texts = prompts(llm)
    if llm.endpoint_type == "grpc-stream":
        from naiad.tools.perf.llm.grpc import GrpcTransport

        return GrpcTransport(perf, llm, texts)
    from naiad.tools.perf.llm.http import HttpTransport

    return HttpTransport(perf, llm, texts)


async def run_sweep(
    perf: PerfSettings,
    llm: LlmSettings,
    progress: Callable[[str], None] = lambda _: None,
    on_result: Callable[[LevelResult], None] = lambda _: None,
    transport: Transport | None = None,
) -> list[LevelResult]:
    """Open the transport (``transport``, or the one the settings name), then measure
    every level of perf's sweep (``--concurrency-range`` or ``--request-rate-range``)."""
    target = transport or make_transport(perf, llm)
    load = LlmLoad(target, perf.request_distribution)
    results = []
    try:
        await target.open()
        for kind, value in perf.steps():
            result = await measure_level(load, perf, llm, kind, value, progress)
            results.append(result)
            on_result(result)
    finally:
        await load.stop()
        await target.close()
    return results
