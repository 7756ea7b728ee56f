"""The flag values of ``naiad serve`` that are more than an int, a float or a word.

Each is Triton's syntax (``--backend-config=onnxruntime,key=value``,
``--trace-config triton,file=...``, ``--allow-http=false``), with Triton's
deprecated spellings folded in.  :mod:`naiad.options.declarations` names these
functions next to the options they set, so the syntax of a flag is found
from its declaration; a bad value is refused here, before the server starts,
with a message that names the flag.

Two kinds live here: ``type=`` functions that check one value as argparse
reads it (their errors become argparse's usage errors), and readers that turn
what argparse collected for a flag (and the flags folded into it) into the
field's value.  A reader receives its own flag's value and every flag's value
by flag name; it raises :class:`SystemExit` with a ``naiad:`` message, which
``naiad serve`` prints as is and the runner's ``cli_args`` turn into an
:class:`~naiad.core.errors.InvalidArgument`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from naiad.repository.sources import is_url

#: What a reader receives: its own flag's value, and every flag's value by flag name.
Reader = Callable[[Any, Mapping[str, Any]], object]

#: Served when no ``--model-repository`` is given: the bundled examples, as the
#: README's first command expects.
DEFAULT_REPOSITORY = Path("examples") / "model_repository"


# -- one value, as argparse reads it ----------------------------------------------------


def boolean(text: str) -> bool:
    """Triton spells a switch ``--flag=true`` or ``--flag=false``; ``--flag`` alone is true."""
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got '{text}'")


def worker_count(text: str) -> int:
    """``--workers``: a count of 1 or more, or ``auto`` for one per core this process may use."""
    if text.lower() == "auto":
        return (
            len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else os.cpu_count() or 1
        )
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(
            f"expected a number of workers (1 or more) or auto, got '{text}'"
        )
    return int(text)


def count(text: str) -> int:
    """A count of 0 or more (``--model-load-retry-count``); anything else is a usage error,
    as in Triton."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected a number (0 or more), got '{text}'")
    return int(text)


_SIZE_UNITS = {
    "": 1, "B": 1,
    "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10,
    "M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20,
    "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30,
    "T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40,
}  # fmt: skip


def memory_size(text: str) -> int:
    """``--model-memory-budget``: bytes (``8GiB``, ``512MB``, ``1073741824``; units are
    powers of 1024, as ``free -h`` counts) or a share of this machine's memory (``60%``)."""
    raw = text.strip().upper().replace(" ", "")
    if raw == "0":
        return 0  # no budget
    if raw.endswith("%"):
        share = _number(raw[:-1], text)
        if not 0 < share <= 100:
            raise argparse.ArgumentTypeError(f"expected a share from 1% to 100%, got '{text}'")
        return int(machine_memory() * share / 100)
    digits = len(raw) - len(raw.lstrip("0123456789."))
    factor = _SIZE_UNITS.get(raw[digits:])
    if factor is None:
        raise argparse.ArgumentTypeError(f"expected a size such as 8GiB or 60%, got '{text}'")
    size = int(_number(raw[:digits], text) * factor)
    if size <= 0:
        raise argparse.ArgumentTypeError(f"expected a size above 0, got '{text}'")
    return size


def _number(text: str, whole: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a size such as 8GiB or 60%, got '{whole}'"
        ) from None


def machine_memory() -> int:
    """The memory this process may use: the machine's, or its control group's limit when
    lower (a container's)."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
    except OSError:
        return total
    return min(total, int(limit)) if limit.isdigit() else total


def resource(text: str) -> str:
    """A ``--rate-limit-resource`` value, checked early for a clear message."""
    from naiad.scheduling.rate_limiter import ResourceLimit

    try:
        ResourceLimit.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


# -- what a flag collected, as the field holds it ---------------------------------------


def repositories(own: Sequence[str], values: Mapping[str, Any]) -> tuple[Path | str, ...]:
    """Local folders as paths, URLs kept as text; the examples when none is given."""
    return tuple(r if is_url(r) else Path(r) for r in own or [str(DEFAULT_REPOSITORY)])


def port_unless_off(switch: str) -> Reader:
    """A frontend's port, or -1 (no socket) when its ``--allow-*`` switch is false."""

    def read(own: int, values: Mapping[str, Any]) -> int:
        return own if values[switch] else -1

    return read


def either(older: str) -> Reader:
    """A switch that its deprecated spelling ``older`` may also turn on."""

    def read(own: bool, values: Mapping[str, Any]) -> bool:
        return own or bool(values[older])

    return read


def backend_config(own: Sequence[str], values: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """``--backend-config=onnxruntime,key=value`` entries, grouped by backend."""
    out: dict[str, dict[str, str]] = {}
    for item in own:
        backend, sep, setting = item.partition(",")
        key, eq, value = setting.partition("=")
        if not sep or not eq:
            raise SystemExit(
                f"naiad: --backend-config expects <backend>,<key>=<value>, got '{item}'"
            )
        out.setdefault(backend, {})[key] = value
    return out


def cache_config(own: Sequence[str], values: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """``--cache-config=local,size=N`` entries by cache; the deprecated
    ``--response-cache-byte-size`` wins over them, as in Triton."""
    out: dict[str, dict[str, str]] = {}
    for item in own:
        cache, sep, setting = item.partition(",")
        key, eq, value = setting.partition("=")
        if not sep or not eq:
            raise SystemExit(f"naiad: --cache-config expects <cache>,<key>=<value>, got '{item}'")
        out.setdefault(cache, {})[key] = value
    byte_size = values["--response-cache-byte-size"]
    if byte_size:
        out.setdefault("local", {})["size"] = str(byte_size)
    return out


def metrics_config(own: Sequence[str], values: Mapping[str, Any]) -> dict[str, str]:
    """``--metrics-config key=value`` entries, checked here for a clear message."""
    from naiad.metrics import MetricsConfig

    out: dict[str, str] = {}
    for item in own:
        key, eq, value = item.partition("=")
        if not eq:
            raise SystemExit(f"naiad: --metrics-config expects <key>=<value>, got '{item}'")
        out[key.strip()] = value.strip()
    try:
        MetricsConfig.parse(out)
    except ValueError as exc:
        raise SystemExit(f"naiad: {exc}") from None
    return out


#: Triton's deprecated ``--trace-*`` flags, as the ``--trace-config`` entry each stands for.
_OLD_TRACE_FLAGS = (
    ("--trace-file", "triton,file"),
    ("--trace-rate", "rate"),
    ("--trace-count", "count"),
    ("--trace-log-frequency", "triton,log-frequency"),
)


def trace_config(own: Sequence[str], values: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """``--trace-config [mode,]key=value`` entries by mode ("" = global), after the
    deprecated ``--trace-*`` flags (so the new spelling wins); repeated ``level``
    values accumulate."""
    out: dict[str, dict[str, str]] = {}
    entries = list(own)
    for flag, key in _OLD_TRACE_FLAGS:
        if values[flag] is not None:
            entries.insert(0, f"{key}={values[flag]}")
    entries[:0] = [f"level={level}" for level in values["--trace-level"]]
    for item in entries:
        head, eq, value = item.partition("=")
        mode, comma, key = head.rpartition(",")
        if not eq or not key or (comma and mode not in ("triton", "opentelemetry")):
            raise SystemExit(f"naiad: --trace-config expects [<mode>,]<key>=<value>, got '{item}'")
        section = out.setdefault(mode, {})
        if not mode and key == "level" and "level" in section:
            section["level"] += "," + value
        elif mode == "opentelemetry" and key == "resource" and "resource" in section:
            section["resource"] += "," + value
        else:
            section[key] = value
    return out
