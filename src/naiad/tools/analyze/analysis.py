"""One ``naiad analyze`` run from start to finish: find the model, start (or reach)
the server, search, and write the CSV, the report and the best repository.

Whatever stops the search, a Ctrl-C included, the trials that finished are
written: an hour of measurements is not lost to an impatient key press.
The trial under way when it stopped is dropped, since a half-swept
configuration would compare unfairly with the others.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from naiad.tools.analyze import charts, search
from naiad.tools.analyze.errors import AnalyzeError, NothingFits
from naiad.tools.analyze.model import AnalyzedModel
from naiad.tools.analyze.objective import Constraints, best_point, choose, score
from naiad.tools.analyze.options import Options
from naiad.tools.analyze.output import config_text, write_best_repository
from naiad.tools.analyze.report import Analysis, write_report
from naiad.tools.analyze.results import Trial, write_csv
from naiad.tools.analyze.server import ChildServer, LoadFailed, Server
from naiad.tools.analyze.space import Candidate, Space
from naiad.tools.interrupt import INTERRUPTED

Say = Callable[[str], None]


def run(options: Options, say: Say = print) -> int:
    """Analyse and write; the exit code (errors before the search are raised)."""
    _check(options)
    charts.check_available()
    options.out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="naiad-analyze-") as scratch:
        server = _server(options, Path(scratch))
        try:
            model = _inspect(server, options)
            space = model.space(options.asked)
            analysis = _search(server, model, space, options, say)
        finally:
            server.stop()
    return _write(analysis, model, options, say)


def _check(options: Options) -> None:
    repository, name = options.repository, options.model
    if repository is not None:
        if not repository.is_dir():
            raise AnalyzeError(f"--model-repository {repository}: no such folder")
        if not (repository / name).is_dir():
            known = sorted(p.name for p in repository.iterdir() if p.is_dir())
            raise AnalyzeError(
                f"model '{name}' is not in {repository} (it has: {', '.join(known) or 'nothing'})"
            )
    elif options.url is None:
        raise AnalyzeError("give --model-repository (or --url of a naiad in explicit mode)")
    if options.url is not None and options.protocol != "http":
        raise AnalyzeError("with --url, naiad analyze measures over HTTP (leave out -i)")
    if options.out_dir.exists() and not options.out_dir.is_dir():
        raise AnalyzeError(f"-o {options.out_dir}: exists and is not a folder")


def _server(options: Options, scratch: Path) -> Server:
    if options.url is not None:
        address = options.url.removeprefix("http://")
        return Server(address, options.server_pid, address)
    assert options.repository is not None
    return ChildServer(options.repository, options.model, scratch, options.protocol,
                       options.startup_timeout_s)  # fmt: skip


def _inspect(server: Server, options: Options) -> AnalyzedModel:
    from naiad.config import ConfigError, config_from_json, read_model_config

    try:
        server.load(options.model)
    except LoadFailed as exc:
        raise AnalyzeError(f"model '{options.model}' does not load: {exc}") from None
    served = server.served_config(options.model)
    base = None
    if options.repository is not None:
        try:
            base = read_model_config(options.repository / options.model)
        except ConfigError as exc:
            raise AnalyzeError(str(exc)) from None
    return AnalyzedModel(options.model, base or config_from_json(served), served)


def _search(
    server: Server, model: AnalyzedModel, space: Space, options: Options, say: Say
) -> Analysis:
    from naiad.tools.analyze.measure import Measurer

    grid = len(space.grid())
    planned = search.planned_trials(space, options.search)
    sweep = options.sweep
    analysis = Analysis(
        model=model.name,
        search=options.search,
        constraints=options.constraints,
        trials=[],
        planned=planned,
        grid_size=grid,
        settings={
            "knobs searched": ", ".join(space.varied()) or "none (one configuration)",
            "concurrency": ",".join(str(c) for c in sweep.concurrency),
            "measurement": f"{sweep.protocol}, windows of {sweep.measurement_interval_ms} ms, "
            f"stable within {sweep.stability_percentage:g}% over 3 windows "
            f"(at most {sweep.max_trials})",
            "repeats": f"{options.repeats} sweep(s) per configuration; throughput is their "
            "mean, ± the half-width of its 95% confidence interval",
        },
    )
    say(
        f"naiad analyze: '{model.name}', {options.search} search: {planned} trials of a grid of "
        f"{grid} configurations, concurrency {analysis.settings['concurrency']}"
    )
    measurer = Measurer(server, model, options.sweep, repeats=options.repeats)

    def evaluate(candidate: Candidate) -> Trial:
        trial = measurer(candidate)
        analysis.trials.append(trial)
        say(f"trial {trial.number}/{planned}: {candidate.describe()}: "
            f"{_outcome(trial, options.constraints)}")  # fmt: skip
        return trial

    start = time.monotonic()
    try:
        if options.search == "brute":
            search.brute(space, evaluate)
        else:
            search.quick(space, evaluate, lambda t: score(t, options.constraints))
    except KeyboardInterrupt:
        analysis.interrupted = True
        say(f"interrupted: writing the {len(analysis.trials)} finished trials")
    analysis.seconds = time.monotonic() - start
    return analysis


def _outcome(trial: Trial, constraints: Constraints) -> str:
    if trial.error:
        return f"failed: {trial.error}"
    point = best_point(trial, constraints)
    if point is not None:
        return (f"best {point.throughput:.0f} infer/s (p99 {point.p99_us / 1000:.2f} ms "
                f"at concurrency {point.concurrency})")  # fmt: skip
    top = max(trial.points, key=lambda p: p.throughput)
    return (f"misses the constraints (at most {top.throughput:.0f} infer/s, lowest p99 "
            f"{min(p.p99_us for p in trial.points) / 1000:.2f} ms)")  # fmt: skip


def _write(analysis: Analysis, model: AnalyzedModel, options: Options, say: Say) -> int:
    out = options.out_dir
    choice = choose(analysis.trials, options.constraints)
    best = choice.trial
    analysis.choice = choice
    meets = {
        (t.number, p.concurrency): options.constraints.meets(p)
        for t in analysis.trials
        for p in t.points
    }
    rows = write_csv(out / "results.csv", analysis.trials, meets)
    analysis.chosen = best
    if best is not None:
        point = best_point(best, options.constraints)
        assert point is not None
        comment = (
            f"chosen by naiad analyze ({options.search} search, "
            f"{options.constraints.describe()}): {best.candidate.describe()}\n"
            f"{point.throughput:.1f} infer/s at concurrency {point.concurrency}, "
            f"p99 {point.p99_us / 1000:.2f} ms"
        )
        config = model.config_for(best.candidate)
        analysis.chosen_config = config_text(config)
        source = options.repository / model.name if options.repository is not None else None
        analysis.best_repository = write_best_repository(out, model.name, source, config, comment)
    write_report(out / "report.html", analysis)
    say(f"wrote {out / 'results.csv'} ({rows} rows) and {out / 'report.html'}")
    if best is not None:
        say(f"best: #{best.number} {best.candidate.describe()}; its repository: "
            f"{analysis.best_repository}")  # fmt: skip
        say(f"  why: {choice.reason(options.constraints)}")
    if choice.excluded:  # only constraints exclude
        say(
            f"excluded by the constraints ({options.constraints.describe()}): "
            + ", ".join(f"#{t.number}" for t in choice.excluded)
        )
    if analysis.interrupted:
        return INTERRUPTED
    if best is None:
        raise NothingFits(
            f"no configuration met the constraints ({options.constraints.describe()}); "
            "see the report for how close each came"
        )
    return 0
