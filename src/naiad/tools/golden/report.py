"""What ``naiad test`` prints, and the JUnit XML that CI systems read.

One line per case and protocol, starting with its verdict so ``grep ^FAIL``
finds every failure; a failure's further problems follow on indented lines;
then one summary line.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from naiad.tools.golden.session import Outcome


def line(outcome: Outcome, protocols: Sequence[str]) -> str:
    """``PASS add_sub/tests/basic.json [grpc] (3 ms)``, or FAIL with the first problem."""
    verdict = "RECORDED" if outcome.recorded else "PASS" if outcome.passed else "FAIL"
    where = f" [{outcome.protocol}]" if len(protocols) > 1 or outcome.protocol == "load" else ""
    head = f"{verdict} {outcome.name}{where}"
    if outcome.problems:
        first, *more = outcome.problems
        return "\n".join([f"{head}: {first}", *(f"    {problem}" for problem in more)])
    note = " (answered; no validation_data to compare)" if outcome.unchecked else ""
    if outcome.recorded:
        note = " (validation_data written)"
    return f"{head} ({outcome.seconds * 1000:.0f} ms){note}"


def summary(outcomes: Sequence[Outcome], protocols: Sequence[str], seconds: float) -> str:
    failed = sum(not o.passed for o in outcomes)
    recorded = sum(o.recorded for o in outcomes)
    passed = len(outcomes) - failed - recorded
    counts = [f"{passed} passed", f"{failed} failed"] + (
        [f"{recorded} recorded"] if recorded else []
    )
    cases = _count(len({o.name for o in outcomes if o.protocol != "load"}), "case")
    models = _count(len({o.model for o in outcomes}), "model")
    return (
        f"naiad test: {', '.join(counts)} ({cases} of {models}, over {', '.join(protocols)}) "
        f"in {seconds:.1f}s"
    )


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def write_junit(path: Path, outcomes: Sequence[Outcome], seconds: float) -> None:
    """A JUnit XML report: one testcase per case and protocol, classname ``naiad.<model>``."""
    failures = sum(not o.passed for o in outcomes)
    suites = ET.Element("testsuites", tests=str(len(outcomes)), failures=str(failures))
    suite = ET.SubElement(suites, "testsuite", name="naiad test", tests=str(len(outcomes)),
                          failures=str(failures), errors="0", time=f"{seconds:.3f}")  # fmt: skip
    for outcome in outcomes:
        case = ET.SubElement(suite, "testcase", classname=f"naiad.{outcome.model}",
                             name=f"{outcome.name} [{outcome.protocol}]",
                             time=f"{outcome.seconds:.3f}")  # fmt: skip
        if outcome.problems:
            failure = ET.SubElement(case, "failure", message=outcome.problems[0])
            failure.text = "\n".join(outcome.problems)
    ET.indent(suites)
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)
