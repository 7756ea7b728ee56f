#!/usr/bin/env python
"""Regenerate naiad's protobuf modules from the ``.proto`` files in ``src/``.

Run from anywhere: ``python scripts/gen_protos.py``.  The generated
``*_pb2.py`` / ``*_pb2.pyi`` files are committed, so installing naiad never
needs ``grpcio-tools``; ``tests/config/test_generated.py`` checks they are
up to date.

Two rewrites make the output fit naiad:

* ``_descriptor_pool.Default()`` becomes naiad's own pool
  (:data:`naiad.config.proto_pool.POOL`).  ``tritonclient`` registers files
  with the same names (``model_config.proto``, full names ``inference.*``) in
  the default pool, and protobuf refuses a second, different definition of a
  file or symbol in one pool; tests import both.  A private pool keeps our
  full names (so the wire format and JSON are Triton's) without the clash.
* ``import model_config_pb2`` (protoc's flat import for a ``.proto`` that
  imports another one from the list below) becomes a package import.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

# (directory holding the .proto, relative to the repo root; proto file name).
# Each directory is also an include path, so later entries may import earlier ones.
PROTOS: list[tuple[str, str]] = [
    ("src/naiad/config", "model_config.proto"),
    ("src/naiad/frontends/grpc", "grpc_service.proto"),
    ("src/naiad/frontends/grpc", "health.proto"),
]

POOL_MODULE = "naiad.config.proto_pool"


def _module_package(proto_dir: str) -> str:
    """Python package of a proto dir under ``src/`` (``naiad.config``)."""
    return ".".join((ROOT / proto_dir).resolve().relative_to(SRC).parts)


def _declares_service(proto: Path) -> bool:
    """Whether a ``.proto`` declares a gRPC service (then gRPC stubs are generated too)."""
    return (
        re.search(r"^service\s", proto.read_text(encoding="utf-8"), flags=re.MULTILINE) is not None
    )


def _rewrite(text: str, packages: dict[str, str]) -> str:
    """Apply naiad's pool and import rewrites to generated ``.py``/``.pyi`` text."""
    text = text.replace(
        "from google.protobuf import descriptor_pool as _descriptor_pool\n",
        f"from google.protobuf import descriptor_pool as _descriptor_pool\n"
        f"from {POOL_MODULE} import POOL as _naiad_pool\n",
        1,
    )
    text = text.replace(
        "_descriptor_pool.Default().AddSerializedFile(", "_naiad_pool.AddSerializedFile("
    )

    def package_import(match: re.Match[str]) -> str:
        module = match.group(1)
        package = packages.get(module)
        return match.group(0) if package is None else f"from {package} import {module} as"

    return re.sub(r"^import (\w+_pb2) as", package_import, text, flags=re.MULTILINE)


def run_protoc(args: list[str]) -> int:
    """grpc_tools' protoc in a child interpreter: in-process, its bundled protobuf
    runtime clashes with the one torch or tensorflow loads (a segfault)."""
    return subprocess.run([sys.executable, "-m", "grpc_tools.protoc", *args]).returncode


def generate(out_root: Path | None = None) -> list[Path]:
    """Generate every proto in :data:`PROTOS`; returns the written files.

    With ``out_root`` the files go to ``out_root/<proto dir>`` instead of the
    source tree (used by the freshness test).
    """
    includes = sorted({str(ROOT / d) for d, _ in PROTOS})
    packages = {Path(f).stem + "_pb2": _module_package(d) for d, f in PROTOS}
    written: list[Path] = []
    for proto_dir, proto_file in PROTOS:
        out_dir = (out_root or ROOT) / proto_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        args = [*(f"-I{i}" for i in includes)]
        args += [f"--python_out={out_dir}", f"--pyi_out={out_dir}"]
        stem = Path(proto_file).stem + "_pb2"
        outputs = [out_dir / f"{stem}.py", out_dir / f"{stem}.pyi"]
        if _declares_service(ROOT / proto_dir / proto_file):
            # Servicer base class and stub (``*_pb2_grpc.py``) only where there is a service.
            args.append(f"--grpc_python_out={out_dir}")
            outputs.append(out_dir / f"{stem}_grpc.py")
        args.append(str(ROOT / proto_dir / proto_file))
        if run_protoc(args) != 0:
            raise SystemExit(f"protoc failed for {proto_dir}/{proto_file}")
        for path in outputs:
            path.write_text(_rewrite(path.read_text(encoding="utf-8"), packages), encoding="utf-8")
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write under this root instead of the repo")
    args = parser.parse_args(argv)
    for path in generate(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
