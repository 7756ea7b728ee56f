import pytest

from naiad.core import errors

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("kind", list(errors.Kind))
def test_of_builds_the_class_of_each_kind(kind):
    err = errors.NaiadError.of(kind, "boom")
    assert err.kind is kind
    assert err.message == "boom"
    assert isinstance(err, errors.NaiadError)


def test_core_imports_no_web_or_grpc_library():
    import subprocess
    import sys

    code = (
        "import sys, naiad.engine.dataplane, naiad.server;"
        "bad=[m for m in ('grpc','httptools','aiohttp') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
