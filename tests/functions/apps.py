"""An app with one model of each kind ``@naiad.model`` takes, written into a test's folder
(tests serve it from a file, as users do)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

APP = '''
import asyncio
from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray

import naiad


@naiad.model
def greet(name: str) -> str:
    return f"hello {name}"


@naiad.model(max_batch_size=8, max_queue_delay_us=300_000)
@naiad.batch
def tally(x: NDArray[np.float32]) -> tuple[NDArray[np.float32], NDArray[np.int32]]:
    """Doubles each row, and says how many rows the batch it came in had."""
    return x * 2, np.full((len(x), 1), len(x), np.int32)


@naiad.model(
    inputs=[naiad.Tensor("a", np.int32, [-1]), naiad.Tensor("b", np.int32, [-1])],
    outputs={"sum": (np.int32, [-1]), "diff": (np.int32, [-1])},
)
async def add_sub(a, b):
    await asyncio.sleep(0)
    return {"sum": a + b, "diff": a - b}


@naiad.model
def count(n: int) -> Iterator[int]:
    for i in range(n):
        yield i * 10


@naiad.model(name="scale")
class Scaler:
    def load(self) -> None:
        self.factor = 3.0

    def __call__(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        return x * self.factor


@naiad.model
def fail(x: NDArray[np.float32]) -> NDArray[np.float32]:
    raise ValueError("x is not welcome here")


if __name__ == "__main__":
    raise SystemExit("imported as a script: the server must import it as a module")
'''


def write_app(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "app.py"
    path.write_text(APP)
    return path


def import_app(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module
