"""``naiad test --record``: write what a model answers as a case's expected outputs.

Only cases with inputs only are written (a case that has ``validation_data`` or
an ``error`` is judged as usual), so recording never overwrites an answer a
person checked.  Values are written as the shortest decimal that reads back to
the same number of the output's datatype.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import numpy as np

from naiad.runner.result import InferResult
from naiad.tools.golden.cases import CaseError
from naiad.tools.golden.session import Outcome


def record(outcome: Outcome, batched: bool) -> None:
    """Write ``validation_data`` into the case file from the outcome's answers."""
    case = outcome.case
    assert case is not None
    answers = [
        [_outputs(r, batched) for r in answer] if isinstance(answer, list)
        else _outputs(answer, batched)
        for answer in outcome.answers
    ]  # fmt: skip
    expected: list[Any] = answers
    if case.streamed:  # one list per stream, as "data" has them
        lengths = [len(stream) for stream in case.document["data"]]
        starts = list(itertools.accumulate([0, *lengths]))
        expected = [answers[a:b] for a, b in itertools.pairwise(starts)]
    document = dict(case.document)
    document["validation_data"] = expected
    case.path.write_text(dump(document) + "\n", "utf-8")
    case.document = document
    outcome.recorded = True


def _outputs(result: InferResult, batched: bool) -> dict[str, Any]:
    outputs: dict[str, Any] = {}
    for output_name, array in result.items():
        if batched and array.ndim > 0 and array.shape[0] == 1:
            array = array[0]
        values = [_value(v, output_name) for v in array.reshape(-1)]
        outputs[output_name] = (
            values if array.ndim == 1 else {"content": values, "shape": list(array.shape)}
        )
    return outputs


def _value(value: Any, output: str) -> Any:
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            raise CaseError(
                f"output '{output}' holds bytes that are not UTF-8; "
                "write its validation_data by hand"
            ) from None
    if isinstance(value, np.floating):
        return float(str(value)) if np.isfinite(value) else str(value)
    return value.item() if isinstance(value, np.generic) else value


def dump(value: Any, indent: str = "") -> str:
    """JSON as a person would write a case: a list of numbers or strings on one line."""
    inner = indent + "  "
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(k)}: {dump(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return "[\n" + ",\n".join(inner + dump(v, inner) for v in value) + f"\n{indent}]"
    return json.dumps(value, ensure_ascii=False)
