"""The shared-memory manager and its use by the data plane, without a network.

System regions are real POSIX shm objects (files in /dev/shm, as glibc's
``shm_open`` makes them); CUDA regions use a fake runtime backed by host
memory, so the CUDA bookkeeping is tested on machines without a GPU.
"""

from __future__ import annotations

import ctypes
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from support import onnx_models
from support.onnx_models import write_config

from naiad.core import datatypes
from naiad.core.errors import AlreadyExists, Internal, InvalidArgument, NotFound, Unsupported
from naiad.core.shm import DISABLED, CudaRegionStatus, SharedMemoryManager, SystemRegionStatus
from naiad.core.shm.cuda import CudaError, load_runtime
from naiad.core.types import (
    InferenceRequest,
    InferInput,
    OutputTensor,
    RequestedOutput,
    SharedMemoryRef,
)
from naiad.engine.dataplane import DataPlane
from naiad.options.declarations import ServerOptions

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="needs /dev/shm"),
]

MakeShm = Callable[[int], str]


@pytest.fixture
def make_shm() -> Iterator[MakeShm]:
    """``make_shm(size)`` creates a POSIX shm object and returns its key ("/name")."""
    made: list[Path] = []

    def make(size: int) -> str:
        name = f"naiad_test_{uuid.uuid4().hex[:12]}"
        path = Path("/dev/shm") / name
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        os.ftruncate(fd, size)
        os.close(fd)
        made.append(path)
        return "/" + name

    yield make
    for path in made:
        path.unlink(missing_ok=True)


def shm_file(key: str) -> Path:
    return Path("/dev/shm") / key.lstrip("/")


def held(key: str) -> bool:
    """Whether this process holds a descriptor of the shm object ``key`` (Linux /proc)."""
    target = str(shm_file(key))
    for fd in Path("/proc/self/fd").iterdir():
        try:
            if os.readlink(fd) == target:
                return True
        except OSError:
            continue
    return False


def mapped(key: str) -> bool:
    """Whether this process maps the shm object ``key``: it never should."""
    return str(shm_file(key)) in Path("/proc/self/maps").read_text()


def fill(key: str, data: bytes, offset: int = 0) -> None:
    with open(shm_file(key), "r+b") as f:
        f.seek(offset)
        f.write(data)


def contents(key: str, offset: int, size: int) -> bytes:
    with open(shm_file(key), "rb") as f:
        f.seek(offset)
        return f.read(size)


def out(name: str, data: np.ndarray, datatype: str | None = None) -> OutputTensor:
    dt = datatypes.from_name(datatype) if datatype else datatypes.from_numpy(data.dtype)
    return OutputTensor(name, dt, tuple(data.shape), data)


# -- register / status / unregister -------------------------------------------------


def test_register_status_and_unregister(make_shm: MakeShm) -> None:
    key = make_shm(64)
    shm = SharedMemoryManager()
    shm.register_system("b", key, 0, 64)
    shm.register_system("a", key, 16, 32)
    assert shm.status("system") == [
        SystemRegionStatus("a", key, offset=16, byte_size=32),
        SystemRegionStatus("b", key, offset=0, byte_size=64),
    ]
    assert shm.status("system", "a") == [SystemRegionStatus("a", key, offset=16, byte_size=32)]
    assert shm.status("cuda") == []
    shm.unregister("system", "a")
    shm.unregister("system", "never-registered")  # unknown: a no-op
    assert [r.name for r in shm.status("system")] == ["b"]
    shm.unregister("system")
    assert shm.status("system") == []
    assert not mapped(key)
    assert shm_file(key).exists()  # a client's segment is never unlinked


def test_status_of_unknown_region_is_not_found() -> None:
    shm = SharedMemoryManager()
    with pytest.raises(NotFound, match=r"^Unable to find system shared memory region: 'x'$"):
        shm.status("system", "x")
    with pytest.raises(NotFound, match=r"^Unable to find cuda shared memory region: 'x'$"):
        shm.status("cuda", "x")


def test_duplicate_name_is_already_exists(make_shm: MakeShm) -> None:
    key = make_shm(16)
    shm = SharedMemoryManager()
    shm.register_system("r", key, 0, 16)
    with pytest.raises(AlreadyExists, match=r"^shared memory region 'r' already in manager$"):
        shm.register_system("r", key, 0, 8)


def test_register_checks_the_key_and_the_object_size(make_shm: MakeShm) -> None:
    key = make_shm(64)
    shm = SharedMemoryManager()
    with pytest.raises(InvalidArgument, match=r"^failed to register shared memory region 'r': "):
        shm.register_system("r", key, 0, 65)
    with pytest.raises(InvalidArgument, match="invalid args"):
        shm.register_system("r", key, 60, 8)
    with pytest.raises(Internal, match=r"^Unable to open shared memory region: '/naiad_absent'$"):
        shm.register_system("r", "/naiad_absent", 0, 1)
    with pytest.raises(InvalidArgument, match=r"invalid shm key '//'"):
        shm.register_system("r", "//", 0, 1)
    with pytest.raises(InvalidArgument, match="reserved prefix"):
        shm.register_system("r", "/triton_python_backend_shm_region_1", 0, 1)
    for escape in ("/../etc/passwd", "/..", "/a/b"):
        with pytest.raises(Internal, match="Unable to open shared memory region"):
            shm.register_system("r", escape, 0, 1)
    assert shm.status("system") == []


def test_allow_switch_off_refuses_register_and_unregister(make_shm: MakeShm) -> None:
    shm = SharedMemoryManager(allow_client=False)
    with pytest.raises(Unsupported) as info:
        shm.register_system("r", make_shm(8), 0, 8)
    assert info.value.message == DISABLED
    with pytest.raises(Unsupported, match="--allow-client-shm=true"):
        shm.unregister("system")
    with pytest.raises(Unsupported, match="--allow-client-shm=true"):
        shm.register_cuda("c", bytes(64), 0, 8)
    assert shm.status("system") == [] and shm.status("cuda") == []


# -- reads and writes ------------------------------------------------------------------


def test_reads_copy_the_bytes_at_the_offset(make_shm: MakeShm) -> None:
    key = make_shm(8192)
    shm = SharedMemoryManager()
    shm.register_system("r", key, 4100, 64)  # any offset: nothing is mapped
    fill(key, np.arange(4, dtype=np.int32).tobytes(), 4100 + 8)
    view = np.frombuffer(shm.read(SharedMemoryRef("r", 16, 8)), dtype=np.int32)
    assert view.tolist() == [0, 1, 2, 3]
    assert not view.flags.writeable  # backends cannot scribble on a client's input
    fill(key, np.int32(42).tobytes(), 4100 + 8)
    assert view[0] == 0  # a copy: the client may reuse its object once the request is in
    assert not mapped(key)


def test_a_truncated_object_is_an_error_not_a_crash(make_shm: MakeShm) -> None:
    """The client shrinks its object after registering it: a mapping would fault
    (SIGBUS, the whole server gone); reads and writes answer INVALID_ARG instead."""
    key = make_shm(64)
    shm = SharedMemoryManager()
    shm.register_system("r", key, 0, 64)
    os.truncate(shm_file(key), 0)
    message = (
        "^shared memory region 'r' is no longer as large as registered: its object "
        f"'{key}' holds 0 bytes, 16 bytes are needed at offset 8$"
    )
    with pytest.raises(InvalidArgument, match=message):
        shm.read(SharedMemoryRef("r", 16, 8))
    with pytest.raises(InvalidArgument, match=message):
        shm.write(SharedMemoryRef("r", 16, 8), out("O", np.zeros(4, np.int32)))
    assert os.stat(shm_file(key)).st_size == 0  # a write never grows the client's object
    os.truncate(shm_file(key), 64)
    assert bytes(shm.read(SharedMemoryRef("r", 16, 8))) == bytes(16)


def test_out_of_bounds_offsets_are_errors_never_accesses(make_shm: MakeShm) -> None:
    shm = SharedMemoryManager()
    shm.register_system("r", make_shm(64), 0, 64)
    bad_offset = "^Invalid offset for shared memory region: 'r'$"
    bad_size = "^Invalid offset \\+ byte size for shared memory region: 'r'$"
    for ref, message in [
        (SharedMemoryRef("r", 4, 64), bad_offset),
        (SharedMemoryRef("r", 0, 1 << 62), bad_offset),
        (SharedMemoryRef("r", 8, 60), bad_size),
        (SharedMemoryRef("r", 1 << 64, 0), bad_size),
    ]:
        with pytest.raises(InvalidArgument, match=message):
            shm.read(ref)
        with pytest.raises(InvalidArgument, match=message):
            shm.write(ref, out("OUT", np.zeros(1, np.uint8)))
    with pytest.raises(NotFound, match=r"^Unable to find shared memory region: 'nope'$"):
        shm.read(SharedMemoryRef("nope", 4, 0))


def test_writes_go_into_the_mapping_in_wire_encoding(make_shm: MakeShm) -> None:
    key = make_shm(128)
    shm = SharedMemoryManager()
    shm.register_system("r", key, 0, 128)
    data = np.arange(6, dtype=np.float32).reshape(2, 3).T  # not contiguous
    shm.write(SharedMemoryRef("r", 24, 8), out("A", data))
    assert contents(key, 8, 24) == np.ascontiguousarray(data).tobytes()
    strings = np.array([b"ab", b"", "\u00e9".encode()], dtype=object)
    shm.write(SharedMemoryRef("r", 64, 40), out("S", strings, "BYTES"))
    encoded = datatypes.serialize_bytes(strings)
    assert contents(key, 40, len(encoded)) == encoded


def test_output_larger_than_its_region_slice_is_triton_error(make_shm: MakeShm) -> None:
    shm = SharedMemoryManager()
    shm.register_system("r", make_shm(64), 0, 64)
    with pytest.raises(Internal) as info:
        shm.write(SharedMemoryRef("r", 8, 0), out("OUTPUT0", np.zeros(4, np.float32)))
    assert info.value.message == (
        "shared memory size specified with the request for output 'OUTPUT0' (8 bytes) "
        "should be at least 16 bytes to hold the results"
    )


def test_a_lease_keeps_an_unregistered_region_mapped_until_released(make_shm: MakeShm) -> None:
    key = make_shm(64)
    shm = SharedMemoryManager()
    shm.register_system("r", key, 0, 64)
    ref = SharedMemoryRef("r", 16, 0)
    request = InferenceRequest("m", outputs=[RequestedOutput("OUT", shm=ref)])
    lease = shm.lease(request)
    shm.unregister("system", "r")
    assert shm.status("system") == []
    assert held(key)
    lease.write(ref, out("OUT", np.full(4, 7, np.int32)))
    assert contents(key, 0, 16) == np.full(4, 7, np.int32).tobytes()
    shm.register_system("r", key, 0, 32)  # the name is free again at once
    lease.release()
    lease.release()  # idempotent
    shm.unregister("system")
    assert not held(key)


def test_a_lease_checks_output_references_before_the_model_runs(make_shm: MakeShm) -> None:
    shm = SharedMemoryManager()
    shm.register_system("r", make_shm(64), 0, 64)
    bad = InferenceRequest("m", outputs=[RequestedOutput("O", shm=SharedMemoryRef("r", 8, 60))])
    with pytest.raises(InvalidArgument, match="Invalid offset \\+ byte size"):
        shm.lease(bad)
    missing = InferenceRequest("m", outputs=[RequestedOutput("O", shm=SharedMemoryRef("x", 8))])
    with pytest.raises(NotFound):
        shm.lease(missing)


# -- CUDA ------------------------------------------------------------------------------


class FakeCuda:
    """Device memory faked with host buffers; handles are random 64-byte strings."""

    def __init__(self) -> None:
        self.buffers: dict[bytes, ctypes.Array[ctypes.c_char]] = {}
        self.closed: list[int] = []

    def export(self, size: int) -> bytes:
        handle = os.urandom(64)
        self.buffers[handle] = ctypes.create_string_buffer(size)
        return handle

    def open(self, raw_handle: bytes, device_id: int) -> int:
        if raw_handle not in self.buffers:
            raise CudaError("cudaIpcOpenMemHandle failed: invalid handle")
        return ctypes.addressof(self.buffers[raw_handle])

    def allocation_size(self, ptr: int) -> int:
        sizes = {ctypes.addressof(b): len(b) for b in self.buffers.values()}
        return sizes[ptr]

    def copy(self, dst: int, src: int, count: int, device_id: int) -> None:
        ctypes.memmove(dst, src, count)

    def close(self, ptr: int, device_id: int) -> None:
        self.closed.append(ptr)


def test_cuda_regions_share_the_namespace_and_move_bytes(make_shm: MakeShm) -> None:
    cuda = FakeCuda()
    shm = SharedMemoryManager(cuda=cuda)  # type: ignore[arg-type]
    handle = cuda.export(64)
    shm.register_cuda("g", handle, 0, 64)
    assert shm.status("cuda") == [CudaRegionStatus("g", device_id=0, byte_size=64)]
    with pytest.raises(AlreadyExists):
        shm.register_system("g", make_shm(8), 0, 8)
    with pytest.raises(NotFound, match="registered as CUDA shared memory, not system"):
        shm.status("system", "g")
    ctypes.memmove(cuda.buffers[handle], np.arange(4, dtype=np.int32).tobytes(), 16)
    read = np.frombuffer(shm.read(SharedMemoryRef("g", 8, 4)), dtype=np.int32)
    assert read.tolist() == [1, 2]
    shm.write(SharedMemoryRef("g", 8, 32), out("O", np.array([5, 6], np.int32)))
    assert cuda.buffers[handle].raw[32:40] == np.array([5, 6], np.int32).tobytes()
    with pytest.raises(InvalidArgument, match=r"^failed to register shared memory region 'h'"):
        shm.register_cuda("h", cuda.export(16), 0, 17)  # larger than the allocation
    with pytest.raises(InvalidArgument, match="^failed to register shared memory region: invalid"):
        shm.register_cuda("h", bytes(64), 0, 8)
    shm.unregister("system", "g")  # wrong kind: a no-op, as in Triton
    shm.unregister("cuda")
    assert shm.status("cuda") == [] and len(cuda.closed) == 2


@pytest.mark.skipif(load_runtime() is not None, reason="this machine has a GPU")
def test_without_gpu_cuda_register_is_refused_and_the_rest_works() -> None:
    shm = SharedMemoryManager()
    with pytest.raises(InvalidArgument) as info:
        shm.register_cuda("g", bytes(64), 0, 64)
    assert info.value.message == (
        "failed to register CUDA shared memory region: 'g', GPUs not supported"
    )
    assert shm.status("cuda") == []
    shm.unregister("cuda")


# -- through the data plane ------------------------------------------------------------------


async def test_dataplane_infers_from_and_into_regions(repo: Path, make_shm: MakeShm) -> None:
    onnx_models.add_sub(repo / "simple" / "1" / "model.onnx", "INT32", ("batch", 16))
    write_config(repo / "simple", 'backend: "onnxruntime"\nmax_batch_size: 8\n')
    dp = DataPlane(ServerOptions(model_repositories=(repo,), allow_client_shm=True))
    await dp.start()
    try:
        key = make_shm(256)
        await dp.shm_register_system("io", key, 0, 256)
        a, b = np.arange(16, dtype=np.int32), np.full(16, 2, np.int32)
        fill(key, a.tobytes() + b.tobytes())
        request = InferenceRequest(
            "simple",
            [
                InferInput("INPUT0", datatypes.INT32, (1, 16), shm=SharedMemoryRef("io", 64)),
                InferInput("INPUT1", datatypes.INT32, (1, 16), shm=SharedMemoryRef("io", 64, 64)),
            ],
            outputs=[
                RequestedOutput("OUTPUT0", shm=SharedMemoryRef("io", 64, 128)),
                RequestedOutput("OUTPUT1", shm=SharedMemoryRef("io", 64, 192)),
            ],
        )
        response = await dp.infer(request)
        assert [(o.name, o.data, o.shape) for o in response.outputs] == [
            ("OUTPUT0", None, (1, 16)),
            ("OUTPUT1", None, (1, 16)),
        ]
        assert np.frombuffer(contents(key, 128, 64), np.int32).tolist() == (a + b).tolist()
        assert np.frombuffer(contents(key, 192, 64), np.int32).tolist() == (a - b).tolist()
        assert dp.shm_status("system", "io")[0].byte_size == 256
        small = InferenceRequest(
            "simple",
            [InferInput("INPUT0", datatypes.INT32, (1, 16), shm=SharedMemoryRef("io", 64)),
             InferInput("INPUT1", datatypes.INT32, (1, 16), shm=SharedMemoryRef("io", 64))],
            outputs=[RequestedOutput("OUTPUT0", shm=SharedMemoryRef("io", 32, 128))],
        )  # fmt: skip
        with pytest.raises(Internal, match="should be at least 64 bytes"):
            await dp.infer(small)
        await dp.shm_unregister("system")
        # Inputs were copied out: nothing keeps the object open once it is unregistered.
        assert not held(key)
        assert not mapped(key)
    finally:
        await dp.stop()
