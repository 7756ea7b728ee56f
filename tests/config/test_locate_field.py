"""The line locator behind validation errors."""

from __future__ import annotations

import pytest

from naiad.config.locate import locate

pytestmark = pytest.mark.unit

TEXT = """name: "m"   # comment with input { braces
max_batch_size: 8
input [
  {
    name: "a"
    dims: [ 1, 2 ]
  },
  {
    name: "b"
    dims: [ -1 ]
    reshape: { shape: [ ] }
  }
]
output { name: "o" dims: 3 }
output
{
  name: "p"
  dims: 3
  dims: 4
}
dynamic_batching {
  preferred_batch_size: [ 4, 16 ]
  priority_queue_policy {
    key: 3
    value: { timeout_action: DELAY }
  }
}
parameters { key: "k" value: { string_value: "a \\"quoted\\" value" } }
parameters: {
  key: "x"
  value: {
    string_value: "v"
  }
}
"""


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("name", 1),
        ("max_batch_size", 2),
        ("input", 3),
        ("input[0]", 4),
        ("input[1]", 8),
        ("input[0].dims", 6),
        ("input[1].name", 9),
        ("input[1].reshape.shape", 11),
        ("output[0].dims", 14),
        ("output[1]", 16),
        ("output[1].dims", 18),
        ("dynamic_batching.preferred_batch_size", 22),
        ("dynamic_batching.priority_queue_policy[3]", 24),
        ("dynamic_batching.priority_queue_policy[3].timeout_action", 25),
        ('parameters["k"].string_value', 28),
        ('parameters["x"]', 30),
        ('parameters["x"].string_value', 32),
        ("input[5].dims", 3),  # no such element: the field's own line
        ("input[1].data_type", 8),  # absent field: its element's line
        ("dynamic_batching.max_queue_delay_microseconds", 21),
        ("instance_group[0].count", None),
    ],
)
def test_locate(path: str, line: int | None) -> None:
    assert locate(TEXT, path) == line


def test_locate_tolerates_garbage() -> None:
    assert locate("input [ { name: ", "input[0].name") == 1
    assert locate("", "name") is None
