"""naiad's pytest plugin: a ``naiad_server`` fixture over a team's model repository,
and its golden cases collected as tests.

pytest loads it in every run where naiad is installed (the ``pytest11`` entry
point), so it only declares options, ini keys and a marker; a server starts
the first time a test needs one, once per repository and run, and stops when
the run ends.

Which repository: ``@pytest.mark.naiad_repository("path")`` on the test (a path
relative to the test's file), else ``--naiad-repository PATH`` (relative to the
current folder), else the ini key ``naiad_repository`` (relative to the ini
file).  When pytest is pointed at that repository (``pytest models``, or
``testpaths``), each ``<model>/tests/*.json`` case becomes a test per protocol
of ``--naiad-protocol`` (:mod:`naiad.testing.items`); :mod:`naiad.testing.choices`
holds what the run chose, for both.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from naiad.testing.choices import (
    PROTOCOLS,
    SERVERS,
    configured_repository,
    server_for,
)

if TYPE_CHECKING:
    from naiad.testing.server import NaiadServer


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("naiad", "naiad model repository")
    group.addoption("--naiad-repository", metavar="PATH",
                    help="the model repository the naiad_server fixture serves")  # fmt: skip
    group.addoption("--naiad-protocol", choices=(*PROTOCOLS, "all"),
                    help="how collected golden cases are sent (default: embedded)")  # fmt: skip
    parser.addini("naiad_repository", "the model repository the naiad_server fixture serves "
                  "(relative to the ini file)")  # fmt: skip
    parser.addini("naiad_protocol", "how collected golden cases are sent: embedded, http, "
                  "grpc or all", default="embedded")  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    _rewrite_only_the_plugin(config)
    config.addinivalue_line(
        "markers",
        "naiad_repository(path): the model repository naiad_server serves for this test "
        "(relative to the test's file)",
    )
    config.stash[SERVERS] = {}


def _rewrite_only_the_plugin(config: pytest.Config) -> None:
    """pytest rewrites the asserts of every module in a distribution that declares a
    ``pytest11`` plugin, so each naiad module a test run imports would be parsed
    again with :mod:`ast`: slower imports for nothing, and a server that loads
    models in parallel threads parses in two threads at once, which CPython 3.11
    can fail with ``SystemError: AST constructor recursion depth mismatch`` (a
    model then fails to load, now and then).  pytest has no public way to take a
    name back; where its hook looks different, this does nothing."""
    hook = getattr(config.pluginmanager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    if hook is None or not isinstance(marked, set) or "naiad" not in marked:
        return
    marked.discard("naiad")
    hook.mark_rewrite("naiad.testing")  # the plugin's own modules, as before (clears its cache)


def pytest_unconfigure(config: pytest.Config) -> None:
    servers = config.stash.get(SERVERS, {})
    while servers:
        _, server = servers.popitem()
        server.close()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A golden case of the run's repository (``<repo>/<model>/tests/*.json``)."""
    if file_path.suffix != ".json" or file_path.parent.name != "tests":
        return None
    repo = configured_repository(parent.config)
    if repo is None or file_path.resolve().parent.parent.parent != repo:
        return None
    from naiad.testing.items import GoldenCase

    return GoldenCase.from_parent(parent, path=file_path)


def repository(request: pytest.FixtureRequest) -> Path:
    """The repository a test asks for (see the module's docstring for the order)."""
    marker = request.node.get_closest_marker("naiad_repository")
    if marker is not None:
        if len(marker.args) != 1:
            pytest.fail("@pytest.mark.naiad_repository takes one path", pytrace=False)
        return (request.path.parent / str(marker.args[0])).resolve()
    found = configured_repository(request.config)
    if found is None:
        pytest.fail(
            "naiad_server needs a model repository: pass --naiad-repository PATH, set "
            "naiad_repository in the ini file, or mark the test "
            '@pytest.mark.naiad_repository("path")',
            pytrace=False,
        )
    return found


@pytest.fixture
def naiad_server(request: pytest.FixtureRequest) -> NaiadServer:
    """The test's model repository, served in this process and on loopback HTTP and gRPC
    ports (:class:`naiad.testing.NaiadServer`); started once per repository and run."""
    return server_for(request.config, repository(request))
