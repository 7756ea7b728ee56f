"""Triton's flags that naiad accepts without effect, each with the reason.

Launch scripts, Helm values and KServe runtimes written for ``tritonserver``
pass flags about things naiad does not have (backend shared libraries, a
pinned memory pool, a SageMaker frontend, thread pools).  Refusing them would
make every such deployment fail at start-up, so ``naiad serve`` accepts every
flag of ``tritonserver --help`` (2.51 and the newest release): the ones that
mean something here are options (:mod:`naiad.options.declarations`), and the rest
are declared once in :data:`WITHOUT_EFFECT` below.  That table makes their
arguments (the value is still checked as Triton checks it: a count must be a
number), their ``--help`` entries, and the warning logged at start-up for each
one given, which names the flag and says why it changes nothing.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from naiad.options.values import boolean

#: The ``naiad serve --help`` group of these flags, and what it says of them.
GROUP = "Triton flags without effect"
ABOUT = (
    "accepted so that command lines written for tritonserver run unchanged; each one "
    "given logs a warning saying why it has no effect (docs/triton-flags.md)"
)


def _pair(first: Callable[[str], object], sep: str, second: Callable[[str], object]) -> Any:
    """A value ``<first><sep><second>``, as Triton's pair options read it."""

    def check(text: str) -> str:
        left, found, right = text.partition(sep)
        try:
            if not found:
                raise ValueError
            first(left)
            second(right)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected <{_kind(first)}>{sep}<{_kind(second)}>, "
                                             f"got '{text}'") from None  # fmt: skip
        return text

    return check


def _kind(parse: Callable[[str], object]) -> str:
    if parse is int:
        return "integer"
    return "number" if parse is float else "string"


def _setting(text: str) -> str:
    """``<name>,<key>=<value>`` (``--host-policy``)."""
    name, comma, setting = text.partition(",")
    if not comma or "=" not in setting:
        raise argparse.ArgumentTypeError(f"expected <name>,<setting>=<value>, got '{text}'")
    return text


@dataclass(frozen=True)
class WithoutEffect:
    """A Triton flag naiad accepts and ignores, and why."""

    flag: str
    #: How the value reads: ``bool`` (a switch), ``int``, ``float``, ``str`` or a checker.
    value: Callable[[str], object]
    why: str
    #: For a switch, Triton's default: giving that value changes nothing, so it is not
    #: worth a warning.
    default: bool | None = None
    metavar: str | None = None

    @property
    def dest(self) -> str:
        return "triton_" + self.flag.lstrip("-").replace("-", "_")

    def warning(self) -> str:
        return f"{self.flag} has no effect in naiad: {self.why}"


_SAGEMAKER = "naiad has no SageMaker frontend"
_VERTEX = "naiad has no Vertex AI frontend"
_ONE_LOOP = "naiad's {} frontend is one event loop per process; use --workers N for more processes"

#: Every flag of ``tritonserver --help`` (2.51 and the newest release) that is no
#: option of naiad's, in the order of Triton's help.
WITHOUT_EFFECT: tuple[WithoutEffect, ...] = (
    WithoutEffect(
        "--enable-peer-access", bool, default=True,
        why="naiad does not set up GPU peer access; the backend frameworks decide it",
    ),
    WithoutEffect("--http-thread-count", int, _ONE_LOOP.format("HTTP"), metavar="N"),
    WithoutEffect("--grpc-infer-thread-count", int, _ONE_LOOP.format("gRPC"), metavar="N"),
    WithoutEffect(
        "--grpc-infer-allocation-pool-size", int, metavar="N",
        why="naiad keeps no pool of gRPC request and response objects",
    ),
    WithoutEffect(
        "--grpc-max-response-pool-size", int, metavar="N",
        why="naiad keeps no pool of gRPC response objects",
    ),
    WithoutEffect(
        "--grpc-max-connection-age", int, metavar="MS",
        why="naiad does not close gRPC connections by age (--grpc-max-connection-idle "
        "closes idle ones)",
    ),
    WithoutEffect(
        "--grpc-max-connection-age-grace", int, metavar="MS",
        why="naiad does not close gRPC connections by age",
    ),
    WithoutEffect("--allow-sagemaker", bool, _SAGEMAKER, default=False),
    WithoutEffect("--sagemaker-port", int, _SAGEMAKER, metavar="PORT"),
    WithoutEffect("--sagemaker-safe-port-range", _pair(int, "-", int), _SAGEMAKER,
                  metavar="PORT-PORT"),  # fmt: skip
    WithoutEffect("--sagemaker-thread-count", int, _SAGEMAKER, metavar="N"),
    WithoutEffect("--allow-vertex-ai", bool, _VERTEX, default=False),
    WithoutEffect("--vertex-ai-port", int, _VERTEX, metavar="PORT"),
    WithoutEffect("--vertex-ai-thread-count", int, _VERTEX, metavar="N"),
    WithoutEffect("--vertex-ai-default-model", str, _VERTEX, metavar="NAME"),
    WithoutEffect(
        "--backend-directory", str, metavar="PATH",
        why="naiad's backends are Python modules found by name; there are no backend "
        "libraries to search",
    ),
    WithoutEffect(
        "--repoagent-directory", str, metavar="PATH",
        why="naiad loads no repository agent libraries",
    ),
    WithoutEffect(
        "--cache-directory", str, metavar="PATH",
        why="the response cache is built in (--cache-config local,size=N); there are no "
        "cache libraries to load",
    ),
    WithoutEffect(
        "--pinned-memory-pool-byte-size", int, metavar="BYTES",
        why="naiad keeps no pinned host memory pool; the backend frameworks move tensors "
        "to and from GPUs",
    ),
    WithoutEffect(
        "--cuda-memory-pool-byte-size", _pair(int, ":", int), metavar="GPU:BYTES",
        why="naiad keeps no CUDA memory pool of its own; the backend frameworks allocate "
        "GPU memory",
    ),
    WithoutEffect(
        "--cuda-virtual-address-size", _pair(int, ":", int), metavar="GPU:BYTES",
        why="naiad reserves no CUDA virtual address space for implicit state",
    ),
    WithoutEffect(
        "--min-supported-compute-capability", float, metavar="CC",
        why="naiad does not filter GPUs by compute capability; the backend frameworks "
        "decide which GPUs they can use",
    ),
    WithoutEffect(
        "--buffer-manager-thread-count", int, metavar="N",
        why="naiad copies tensors on the thread that executes a batch; there is no "
        "buffer-manager thread pool",
    ),
    WithoutEffect(
        "--host-policy", _setting, metavar="POLICY,KEY=VALUE",
        why="naiad does not bind instances to NUMA nodes or CPU cores",
    ),
    WithoutEffect(
        "--model-load-gpu-limit", _pair(int, ":", float), metavar="GPU:FRACTION",
        why="naiad does not check GPU memory use before it loads a model",
    ),
)  # fmt: skip


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Their arguments, in a ``--help`` group of their own after naiad's options."""
    group = parser.add_argument_group(GROUP, ABOUT)
    for spec in WITHOUT_EFFECT:
        how: dict[str, Any] = {"dest": spec.dest, "default": None, "help": spec.why}
        if spec.value is bool:
            how.update(type=boolean, nargs="?", const=True, metavar="BOOL")
            how["help"] += f" (default: {'true' if spec.default else 'false'})"
        else:
            how.update(type=spec.value, metavar=spec.metavar)
        group.add_argument(spec.flag, **how)


def given(args: argparse.Namespace) -> tuple[str, ...]:
    """The flags of the table that were given, a switch only when set to what is not
    Triton's default (``--allow-sagemaker=false`` changes nothing, so needs no warning)."""
    return tuple(
        spec.flag
        for spec in WITHOUT_EFFECT
        if (value := getattr(args, spec.dest, None)) is not None
        and (spec.value is not bool or value != spec.default)
    )


def warnings(flags: Iterable[str]) -> list[str]:
    """One warning per flag of the table in ``flags``, naming it and saying why."""
    by_flag = {spec.flag: spec for spec in WITHOUT_EFFECT}
    return [by_flag[flag].warning() for flag in dict.fromkeys(flags)]
