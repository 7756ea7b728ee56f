"""CPU gauges from /proc (on fake files), GPU gauges through NVML where a GPU exists."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from metrics.helpers import add_simple, scrape

from naiad.metrics import cpu
from naiad.metrics.exposition import render
from naiad.metrics.gpu import NvmlGpus, open_gpus
from naiad.metrics.system import SystemMetrics

pytestmark = pytest.mark.protocol


def _proc(tmp_path, stat: str, meminfo: str):
    (tmp_path / "stat").write_text(stat)
    (tmp_path / "meminfo").write_text(meminfo)
    return tmp_path


def test_cpu_times_memory_and_utilization(tmp_path):
    proc = _proc(
        tmp_path,
        "cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3\n",
        "MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    250 kB\n",
    )
    before = cpu.read_cpu_times(proc)
    assert before == (200, 1000)
    assert cpu.read_memory(proc) == (1000 * 1024, 750 * 1024)
    _proc(tmp_path, "cpu  400 0 100 1000 100 0 0 0 0 0\n", "")
    after = cpu.read_cpu_times(proc)
    assert cpu.utilization(before, after) == pytest.approx(300 / 600)
    assert cpu.read_memory(proc) is None  # no MemAvailable: no reading
    assert cpu.read_cpu_times(tmp_path / "missing") is None


def test_cpu_metrics_on_the_endpoint_and_switched_off(repo, serve):
    add_simple(repo)
    text = scrape(serve(repo, metrics_port=0))
    for name in ("nv_cpu_utilization", "nv_cpu_memory_total_bytes", "nv_cpu_memory_used_bytes"):
        assert re.search(rf"^{name} \d+(\.\d+)?$", text, re.M), name
    off = scrape(serve(repo, metrics_port=0, allow_cpu_metrics=False))
    assert "nv_cpu_" not in off


def test_gpu_metrics_are_skipped_cleanly_without_a_gpu():
    metrics = SystemMetrics(cpu_metrics=False, gpu_metrics=True)
    metrics._nvml = open_gpus()
    if metrics._nvml is not None:
        pytest.skip("this machine has a GPU")
    metrics.poll()
    assert "nv_gpu_" not in render(metrics.collect())


def test_gpu_metrics_match_what_perf_analyzer_reads():
    gpus = open_gpus()
    if gpus is None:
        pytest.skip("no NVIDIA GPU (or naiad[gpu] not installed)")
    metrics = SystemMetrics(cpu_metrics=False)
    metrics._nvml = gpus
    try:
        metrics.poll()
        text = "\n" + render(metrics.collect())
    finally:
        gpus.close()
    # perf_analyzer's regex: only the gpu_uuid label, plain decimal values.
    for name in (
        "nv_gpu_utilization",
        "nv_gpu_power_usage",
        "nv_gpu_memory_used_bytes",
        "nv_gpu_memory_total_bytes",
    ):
        found = re.findall(rf"\n{name}\{{gpu_uuid=\"([^\"]+)\"\}} (\d+\.?\d*)", text)
        assert found, name
        assert all(uuid.startswith("GPU-") for uuid, _ in found)
    total = re.search(r"\nnv_gpu_memory_total_bytes\{[^}]*\} (\d+)", text)
    assert total and int(total.group(1)) > 0


class _FakeNvml:
    """Just enough of pynvml for NvmlGpus (values in NVML's units: %, bytes, mW, mJ)."""

    def __init__(self) -> None:
        self.energy = 5_000

    def nvmlDeviceGetUUID(self, handle):  # noqa: N802 - NVML's names
        return b"GPU-1234"

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):  # noqa: N802
        return self.energy

    def nvmlDeviceGetUtilizationRates(self, handle):  # noqa: N802
        return SimpleNamespace(gpu=42)

    def nvmlDeviceGetMemoryInfo(self, handle):  # noqa: N802
        return SimpleNamespace(total=80 * 2**30, used=2**30)

    def nvmlDeviceGetPowerUsage(self, handle):  # noqa: N802
        return 150_500

    def nvmlDeviceGetPowerManagementLimit(self, handle):  # noqa: N802
        return 700_000

    def nvmlShutdown(self):  # noqa: N802
        pass


def test_gpu_gauges_in_tritons_units_and_format():
    nvml = _FakeNvml()
    metrics = SystemMetrics(cpu_metrics=False)
    metrics._nvml = NvmlGpus(nvml, ["handle"])
    nvml.energy += 3_000  # 3 J since the server started
    metrics.poll()
    lines = render(metrics.collect()).splitlines()
    for line in (
        'nv_gpu_utilization{gpu_uuid="GPU-1234"} 0.42',
        'nv_gpu_memory_total_bytes{gpu_uuid="GPU-1234"} 85899345920',
        'nv_gpu_memory_used_bytes{gpu_uuid="GPU-1234"} 1073741824',
        'nv_gpu_power_usage{gpu_uuid="GPU-1234"} 150.5',
        'nv_gpu_power_limit{gpu_uuid="GPU-1234"} 700',
        'nv_energy_consumption{gpu_uuid="GPU-1234"} 3',
        "# TYPE nv_energy_consumption counter",
    ):
        assert line in lines, line
