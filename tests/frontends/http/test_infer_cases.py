"""Every shared inference case over HTTP: sync and aio clients, binary and JSON tensors."""

from __future__ import annotations

import pytest
from cases.infer_cases import CASES, InferCase

from frontends.http.runner import run_aio, run_sync

pytestmark = pytest.mark.protocol

BINARY = [pytest.param(True, id="binary"), pytest.param(False, id="json")]
CASE_PARAMS = [pytest.param(case, id=case.id) for case in CASES]


def _skip_json(case: InferCase, binary: bool) -> None:
    if not binary and not case.json_ok:
        pytest.skip("this datatype cannot travel as JSON (see test_wire for the refusal)")


@pytest.mark.parametrize("binary", BINARY)
@pytest.mark.parametrize("case", CASE_PARAMS)
def test_sync_client(http_url: str, case: InferCase, binary: bool) -> None:
    _skip_json(case, binary)
    run_sync(http_url, case, binary)


@pytest.mark.parametrize("binary", BINARY)
@pytest.mark.parametrize("case", CASE_PARAMS)
async def test_aio_client(http_url: str, case: InferCase, binary: bool) -> None:
    _skip_json(case, binary)
    await run_aio(http_url, case, binary)
