"""``--shared-memory system``: inputs and outputs in POSIX shared memory regions.

One region holds every step's inputs, written once; each connection gets an
output region of ``--output-shared-memory-size`` bytes per output, so that
concurrent requests never write over each other's results.
"""

from __future__ import annotations

import os
from multiprocessing import shared_memory
from typing import Any

from naiad.core import datatypes
from naiad.tools.perf.model import Step
from naiad.tools.perf.settings import PerfSettings


class Regions:
    def __init__(self, steps: list[Step], outputs: int, settings: PerfSettings) -> None:
        self.prefix = f"naiad_perf_{os.getpid()}"
        self.output_size = settings.output_shared_memory_size
        self.outputs = outputs
        blobs: list[bytes] = []
        self.places: list[dict[str, tuple[int, int]]] = []
        offset = 0
        for step in steps:
            place = {}
            for name, array in step.items():
                data = (datatypes.serialize_bytes(array) if array.dtype == object
                        else array.tobytes())  # fmt: skip
                place[name] = (offset, len(data))
                blobs.append(data)
                offset += len(data)
            self.places.append(place)
        self.inputs = shared_memory.SharedMemory(f"{self.prefix}_in", create=True,
                                                 size=max(offset, 1))  # fmt: skip
        assert self.inputs.buf is not None
        self.inputs.buf[:offset] = b"".join(blobs)
        self.slots: list[shared_memory.SharedMemory] = []

    def inputs_region(self) -> tuple[str, str, int]:
        """(region name, key, byte size) to register."""
        return self.inputs.name, "/" + self.inputs.name, self.inputs.size

    def outputs_region(self, slot: int) -> tuple[str, str, int]:
        while len(self.slots) <= slot:
            size = max(self.output_size * self.outputs, 1)
            name = f"{self.prefix}_out{len(self.slots)}"
            self.slots.append(shared_memory.SharedMemory(name, create=True, size=size))
        region = self.slots[slot]
        return region.name, "/" + region.name, region.size

    def input_parameters(self, step: int, name: str) -> dict[str, Any]:
        offset, size = self.places[step][name]
        return {"shared_memory_region": self.inputs.name, "shared_memory_byte_size": size,
                "shared_memory_offset": offset}  # fmt: skip

    def output_parameters(self, slot: int, output: int) -> dict[str, Any]:
        return {"shared_memory_region": self.slots[slot].name,
                "shared_memory_byte_size": self.output_size,
                "shared_memory_offset": output * self.output_size}  # fmt: skip

    def names(self) -> list[str]:
        return [self.inputs.name, *(s.name for s in self.slots)]

    def close(self) -> None:
        for region in (self.inputs, *self.slots):
            region.close()
            region.unlink()
