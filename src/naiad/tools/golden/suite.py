"""One ``naiad test`` run: find the cases, serve the repository, run, report."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from naiad.core.errors import NaiadError
from naiad.tools.golden import cases, record, report
from naiad.tools.golden.cases import CaseError
from naiad.tools.golden.session import PROTOCOLS, Outcome, Session


class UsageError(Exception):
    """Nothing to test: the command line or the repository is wrong (exit status 2)."""


def run_suite(args: argparse.Namespace) -> int:
    repository = Path(args.repository)
    if not repository.is_dir():
        raise UsageError(f"{repository}: no such folder (give a local model repository)")
    models = list(args.model) if args.model else None
    unknown = [m for m in models or () if not (repository / m).is_dir()]
    if unknown:
        raise UsageError(f"{repository} has no model '{unknown[0]}'")
    found = cases.find(repository, models)
    if not any(found.values()):
        raise UsageError(
            f"no case files in {repository} (<model>/{cases.CASES_FOLDER}/*.json; docs/testing.md)"
        )
    if args.junit_xml and not Path(args.junit_xml).parent.is_dir():
        raise UsageError(f"--junit-xml {args.junit_xml}: the folder does not exist")
    if args.timeout <= 0:
        raise UsageError("--timeout must be more than 0")
    protocols = list(PROTOCOLS) if args.protocol == "all" else [args.protocol]
    started = time.monotonic()
    from naiad.server import new_event_loop

    loop = new_event_loop()
    try:
        outcomes = loop.run_until_complete(
            _run(repository, found, models, protocols, args.record, args.timeout)
        )
    finally:
        loop.close()
    seconds = time.monotonic() - started
    print(report.summary(outcomes, protocols, seconds))
    if args.junit_xml:
        report.write_junit(Path(args.junit_xml), outcomes, seconds)
    return 1 if any(not o.passed for o in outcomes) else 0


async def _run(
    repository: Path,
    found: dict[str, list[Path]],
    models: list[str] | None,
    protocols: list[str],
    recording: bool,
    timeout: float,
) -> list[Outcome]:
    session = Session(repository, protocols, timeout)
    try:
        await session.start()
    except NaiadError as exc:
        await session.close()
        raise UsageError(exc.message) from None
    outcomes: list[Outcome] = []

    def done(outcome: Outcome) -> None:
        outcomes.append(outcome)
        print(report.line(outcome, protocols), flush=True)

    try:
        for model, reason in session.load_failures().items():
            if not found.get(model) and (models is None or model in models):
                done(Outcome(model, model, "load", problems=[f"failed to load: {reason}"]))
        for model, paths in found.items():
            for path in paths:
                try:
                    case = cases.read(model, path, repository)
                except CaseError as exc:
                    name = path.relative_to(repository).as_posix()
                    for protocol in protocols:
                        done(Outcome(model, name, protocol, problems=[str(exc)]))
                    continue
                for protocol in protocols:
                    outcome = await session.run(case, protocol)
                    if recording and _recordable(outcome):
                        _record(outcome, session)
                    done(outcome)
    finally:
        await session.close()
    return outcomes


def _recordable(outcome: Outcome) -> bool:
    case = outcome.case
    return outcome.passed and case is not None and not case.checked


def _record(outcome: Outcome, session: Session) -> None:
    """Fill in the case file; the case's further protocols then compare against it."""
    assert outcome.case is not None
    signature = session.signatures[(outcome.model, outcome.case.version)]
    try:
        record.record(outcome, signature.max_batch_size > 0)
    except (CaseError, OSError) as exc:
        outcome.problems.append(f"could not record: {exc}")
