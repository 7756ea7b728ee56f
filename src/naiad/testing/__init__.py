"""Test a model repository from pytest: the ``naiad_server`` fixture and the golden cases.

The pytest plugin (:mod:`naiad.testing.plugin`, registered under the ``pytest11``
entry point as ``naiad``) provides the fixture; :func:`golden_cases` lists the
``<model>/tests/*.json`` cases of ``naiad test`` for ``pytest.mark.parametrize``.
Names are handed on lazily, so pytest loading the plugin imports no server code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from naiad.testing.server import NaiadServer, golden_cases

__all__ = ["NaiadServer", "golden_cases"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from naiad.testing import server

        return getattr(server, name)
    raise AttributeError(f"module 'naiad.testing' has no attribute '{name}'")
