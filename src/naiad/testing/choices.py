"""What a run of pytest chose: its repository, its protocols, and its servers.

Shared by the plugin's hooks and fixture (:mod:`naiad.testing.plugin`) and the
collected cases (:mod:`naiad.testing.items`); pytest only, so cheap to import.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from naiad.testing.server import NaiadServer

#: The run's servers by repository, stopped when the run ends.
SERVERS = pytest.StashKey[dict[Path, "NaiadServer"]]()
PROTOCOLS = ("embedded", "http", "grpc")


def configured_repository(config: pytest.Config) -> Path | None:
    """The run's repository: ``--naiad-repository``, else the ini key; None if neither."""
    given = config.getoption("naiad_repository")
    if given:
        return (config.invocation_params.dir / given).resolve()
    ini = config.getini("naiad_repository")
    if ini:
        base = config.inipath.parent if config.inipath else config.rootpath
        return (base / str(ini)).resolve()
    return None


def protocols(config: pytest.Config) -> tuple[str, ...]:
    chosen = config.getoption("naiad_protocol") or str(config.getini("naiad_protocol"))
    if chosen == "all":
        return PROTOCOLS
    if chosen not in PROTOCOLS:
        raise pytest.UsageError(
            f"naiad_protocol: expected embedded, http, grpc or all; got {chosen!r}"
        )
    return (chosen,)


def server_for(config: pytest.Config, path: Path) -> NaiadServer:
    """The run's server over ``path``, started on first use."""
    servers = config.stash[SERVERS]
    if path not in servers:
        if not path.is_dir():
            pytest.fail(f"naiad_server: {path} is not a folder", pytrace=False)
        from naiad.testing.server import NaiadServer

        servers[path] = NaiadServer(path)
    return servers[path]
