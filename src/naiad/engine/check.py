"""``naiad check``: find what ``naiad serve`` would refuse, without serving.

Triton has no such tool; its users find broken configs at start-up, one
problem at a time.  ``naiad check`` runs the checks a load runs, from the
same code: the loader's config preparation and validation, each backend's
``validate``, the model file's signature against the config, the backend's
``check_version`` (what else the file shows: a TorchScript ``forward()``,
a tree model's features), label files, warmup data, the models an
ensemble calls, the version policy and duplicate model names.  Each
problem is one line that starts with the file (and line, where known) it
is about, with the message the load would give.  No model is executed:
files are opened only to be read.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from naiad.backends.registry import BackendRegistry
from naiad.config import ConfigError
from naiad.config.validate_signature import validate_signature
from naiad.core.errors import NaiadError
from naiad.core.signature import Signature
from naiad.engine.ensembles import not_available
from naiad.engine.loader import ModelLoader, PreparedConfig, output_labels
from naiad.engine.registry import ModelRegistry
from naiad.engine.warmup import warmup_requests
from naiad.options.declarations import ServerOptions
from naiad.repository import ModelSource, scan, select_versions
from naiad.scheduling.ensemble_graph import EnsembleGraph


@dataclass
class CheckReport:
    """What ``naiad check`` found: one line per problem, and what it looked at."""

    problems: list[str] = field(default_factory=list)
    models: int = 0
    repositories: int = 0

    def add(self, line: str) -> None:
        if line not in self.problems:  # the same problem of several versions, once
            self.problems.append(line)

    def summary(self) -> str:
        """``checked 3 models in 1 repository: 2 problems``."""
        count = len(self.problems)
        found = f"{_plural(count, 'problem')}" if count else "no problems found"
        return (
            f"checked {_plural(self.models, 'model')} in "
            f"{_plural(self.repositories, 'repository', 'repositories')}: {found}"
        )


def check_repositories(
    repositories: list[Path],
    *,
    disable_auto_complete_config: bool = False,
    backend_config: Mapping[str, Mapping[str, str]] | None = None,
) -> CheckReport:
    """Check every model folder of ``repositories`` as the server would load it, with the
    server's ``--backend-config`` settings (a pickle is refused unless they allow it)."""
    report = CheckReport(repositories=len(repositories))
    for repo in repositories:
        if not repo.is_dir():
            report.add(f"{repo}: model repository not found")
    found = scan([r for r in repositories if r.is_dir()])
    sources = list(found.models.values())
    for name, paths in found.duplicates.items():
        report.add(
            f"{paths[0]}: model '{name}' appears in several repositories "
            f"({', '.join(str(p.parent) for p in paths)}); the server refuses to load it"
        )
        sources += [ModelSource(name, path, path.parent) for path in paths]
    checker = _ModelChecker(
        disable_auto_complete_config, report, found.models, backend_config or {}
    )
    for source in sorted(sources, key=lambda s: (s.name, str(s.path))):
        report.models += 1
        checker.check(source)
    return report


class _ModelChecker:
    def __init__(
        self,
        disable_auto_complete_config: bool,
        report: CheckReport,
        models: dict[str, ModelSource],
        backend_config: Mapping[str, Mapping[str, str]],
    ) -> None:
        self.report = report
        #: The models the server would find, for the ensembles that call them.
        self.models = models
        backends = BackendRegistry()
        #: the server's --backend-config, as a load passes a backend its settings
        self.options = ServerOptions(
            disable_auto_complete_config=disable_auto_complete_config,
            backend_config={name: dict(settings) for name, settings in backend_config.items()},
        )
        self.loader = ModelLoader(ModelRegistry(), backends, self.options)
        # Finds the backend and model files when auto-complete itself fails.
        plain = dataclasses.replace(self.options, disable_auto_complete_config=True)
        self.plain_loader = ModelLoader(ModelRegistry(), backends, plain)

    def check(self, source: ModelSource) -> None:
        if not source.versions():
            self.report.add(f"{source.path}: model '{source.name}' has no version folder")
        prepared = self.prepare(source)
        if prepared is None:
            return
        problems = self.loader.config_problems(prepared)
        for problem in problems:
            self.report.add(_line(source, problem))
        reported = {p.field for p in problems if isinstance(p, ConfigError) and p.field}
        if not problems:
            self.check_model_files(source, prepared)
            if prepared.backend is None:
                self.check_composing(source, prepared)
        self.check_versions(source, prepared, reported, clean=not problems)

    def check_model_files(self, source: ModelSource, prepared: PreparedConfig) -> None:
        """The files a load reads besides the model's own: output labels, warmup data."""
        config = prepared.config
        try:
            output_labels(config, source.path)
        except NaiadError as exc:
            self.report.add(_line(source, exc))
        if prepared.backend is None:
            return  # an ensemble is not warmed up
        try:
            warmup_requests(config, Signature(config), source.path)
        except NaiadError as exc:
            self.report.add(_line(source, exc))

    def check_composing(self, source: ModelSource, prepared: PreparedConfig) -> None:
        """An ensemble's steps call models the repositories hold (a version: its folder)."""
        missing = []
        for name, version in EnsembleGraph(prepared.config).composing():
            model = self.models.get(name)
            if model is None:
                missing.append(name)
            elif version is not None and version not in model.versions():
                missing.append(f"{name} version {version}")
        if missing:
            self.report.add(f"{source.path}: {not_available(source.name, missing)}")

    def prepare(self, source: ModelSource) -> PreparedConfig | None:
        """The completed config; None (with the problem reported) when there is none."""
        try:
            return self.loader.complete_config(source)
        except ConfigError as exc:  # a config that does not parse stops here
            self.report.add(_line(source, exc))
            return None
        except NaiadError as exc:
            failure: NaiadError = exc
        except Exception as exc:  # report, don't crash the checker
            self.report.add(_located(str(source.path), f"{type(exc).__name__}: {exc}"))
            return None
        # Auto-complete failed: a missing model file explains it better.
        try:
            plain = self.plain_loader.complete_config(source)
        except Exception:
            plain = None
        if plain is None or not self.missing_files(source, plain, self.versions(source, plain)):
            self.report.add(_line(source, failure))
        return None

    def versions(self, source: ModelSource, prepared: PreparedConfig) -> list[int]:
        """The versions the server would load (its version policy over the folders)."""
        config = prepared.config
        available = source.versions()
        policy = config.version_policy
        if policy.WhichOneof("policy_choice") == "specific":
            for version in sorted(set(policy.specific.versions) - set(available)):
                self.report.add(
                    f"{source.path}: version {version} of model '{source.name}' specified by "
                    "the version policy is not available"
                )
        return select_versions(policy, available)

    def missing_files(
        self, source: ModelSource, prepared: PreparedConfig, versions: list[int]
    ) -> list[int]:
        """The ``versions`` that lack their model file (each reported)."""
        backend = prepared.backend
        if backend is None:
            return []
        missing = []
        for version in versions:
            path = backend.model_file(prepared.config, source.path, version)
            if path is not None and not path.exists():
                self.report.add(
                    f"{path}: model file not found (model '{source.name}', version {version})"
                )
                missing.append(version)
        return missing

    def check_versions(
        self, source: ModelSource, prepared: PreparedConfig, reported: set[str], *, clean: bool
    ) -> None:
        """Each version's model file is there, agrees with the config and passes the
        backend's own checks (``Backend.check_version``, only for a ``clean`` config).

        A field the config validation already reported is not compared with
        the model again, nor is anything when max_batch_size (which every
        comparison depends on) is invalid: that would only repeat the problem.
        """
        backend = prepared.backend
        if backend is None:
            return
        wanted = self.versions(source, prepared)
        missing = set(self.missing_files(source, prepared, wanted))
        versions = [v for v in wanted if v not in missing]
        for version in versions:
            try:
                signature = backend.model_signature(prepared.config, source.path, version)
            except NaiadError as exc:
                self.report.add(_line(source, exc))
                continue
            agrees = True
            if signature is not None and "max_batch_size" not in reported:
                problems = validate_signature(prepared.config, signature)
                problems.items = [
                    (f, f"version {version}: {d}" if len(versions) > 1 else d)
                    for f, d in problems.items
                    if f not in reported
                ]
                for error in problems.errors(prepared.path, prepared.text):
                    self.report.add(str(error))
                agrees = not problems.items
            # The backend's own checks come after the config's and the signature's, as in a
            # load; they are not run on a config already refused (that would repeat it).
            if clean and agrees:
                self.check_version(source, prepared, version)

    def check_version(self, source: ModelSource, prepared: PreparedConfig, version: int) -> None:
        """The backend's own checks of a version's model file (``Backend.check_version``)."""
        assert prepared.backend is not None
        try:
            settings = self.options.backend_config.get(prepared.config.backend, {})
            prepared.backend.check_version(prepared.config, source.path, version, settings)
        except NaiadError as exc:
            path = prepared.backend.model_file(prepared.config, source.path, version)
            self.report.add(_located(str(path or source.path), exc.message))
        except Exception as exc:  # report, don't crash the checker
            self.report.add(_located(str(source.path), f"{type(exc).__name__}: {exc}"))


def _line(source: ModelSource, error: NaiadError) -> str:
    """A problem as a line that starts with its file (a config error names its own)."""
    if isinstance(error, ConfigError) and error.path:
        return str(error)
    return _located(str(source.path), error.message)


#: A frame of a Python model's traceback as its errors list them: ``  file(line): function``.
_FRAME = re.compile(r"^\s*(?P<file>.+)\((?P<line>\d+)\): (?P<function>.+)$")


def _located(where: str, message: str) -> str:
    """``where: message`` on one line, as a CI log wants it.

    A Python model's error carries its traceback ("At:" and the frames,
    innermost first): the innermost frame's file and line start the line.
    """
    text, _, frames = message.partition("\n\nAt:\n")
    frame = _FRAME.match(frames.splitlines()[0]) if frames.strip() else None
    if frame is not None:
        where = f"{frame['file']}:{frame['line']}"
        text = f"{text} (in {frame['function']})"
    return f"{where}: " + " ".join(line.strip() for line in text.splitlines() if line.strip())


def _plural(count: int, singular: str, plural: str | None = None) -> str:
    return f"{count} {singular if count == 1 else plural or singular + 's'}"
