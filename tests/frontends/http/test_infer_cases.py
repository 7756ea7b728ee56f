"""Every shared inference case over HTTP: sync and aio clients, binary and JSON tensors."""

from __future__ import annotations

import pytest
from cases.infer_cases import CASES, InferCase

from frontends.http.runner import run_aio, run_sync

BINARY = [pytest.param(True, id="binary"), pytest.param(False, id="json")]
#: cases the model side cannot serve yet (not a frontend matter)
BACKEND_GAPS = {
    "datatype_BF16": "onnxruntime's numpy binding cannot take ml_dtypes.bfloat16 arrays",
}
CASE_PARAMS = [
    pytest.param(
        case,
        id=case.id,
        marks=[pytest.mark.xfail(reason=BACKEND_GAPS[case.id])] if case.id in BACKEND_GAPS else [],
    )
    for case in CASES
]


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
