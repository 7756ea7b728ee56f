"""naiad's pytest plugin: a ``naiad_server`` fixture over a team's model repository.

pytest loads it in every run where naiad is installed (the ``pytest11`` entry
point), so it only declares an option, an ini key and a marker; a server starts
the first time a test asks for ``naiad_server``, once per repository and run,
and stops when the run ends.

Which repository: ``@pytest.mark.naiad_repository("path")`` on the test (a path
relative to the test's file), else ``--naiad-repository PATH`` (relative to the
current folder), else the ini key ``naiad_repository`` (relative to the ini
file).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from naiad.testing.server import NaiadServer

_SERVERS = pytest.StashKey[dict[Path, "NaiadServer"]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("naiad", "naiad model repository")
    group.addoption("--naiad-repository", metavar="PATH",
                    help="the model repository the naiad_server fixture serves")  # fmt: skip
    parser.addini("naiad_repository", "the model repository the naiad_server fixture serves "
                  "(relative to the ini file)")  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "naiad_repository(path): the model repository naiad_server serves for this test "
        "(relative to the test's file)",
    )
    config.stash[_SERVERS] = {}


def pytest_unconfigure(config: pytest.Config) -> None:
    servers = config.stash.get(_SERVERS, {})
    while servers:
        _, server = servers.popitem()
        server.close()


def repository(request: pytest.FixtureRequest) -> Path:
    """The repository a test asks for (see the module's docstring for the order)."""
    marker = request.node.get_closest_marker("naiad_repository")
    if marker is not None:
        if len(marker.args) != 1:
            pytest.fail("@pytest.mark.naiad_repository takes one path", pytrace=False)
        return (request.path.parent / str(marker.args[0])).resolve()
    config = request.config
    given = config.getoption("naiad_repository")
    if given:
        return (config.invocation_params.dir / given).resolve()
    ini = config.getini("naiad_repository")
    if ini:
        base = config.inipath.parent if config.inipath else config.rootpath
        return (base / str(ini)).resolve()
    pytest.fail(
        "naiad_server needs a model repository: pass --naiad-repository PATH, set "
        "naiad_repository in the ini file, or mark the test "
        '@pytest.mark.naiad_repository("path")',
        pytrace=False,
    )


@pytest.fixture
def naiad_server(request: pytest.FixtureRequest) -> NaiadServer:
    """The test's model repository, served in this process and on loopback HTTP and gRPC
    ports (:class:`naiad.testing.NaiadServer`); started once per repository and run."""
    path = repository(request)
    servers = request.config.stash[_SERVERS]
    if path not in servers:
        if not path.is_dir():
            pytest.fail(f"naiad_server: {path} is not a folder", pytrace=False)
        from naiad.testing.server import NaiadServer

        servers[path] = NaiadServer(path)
    return servers[path]
