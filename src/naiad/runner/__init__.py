"""``naiad.Runner``: the models of a repository as attributes, in any of four modes."""

from naiad.runner.model import RunnerModel
from naiad.runner.result import InferResult, classifications
from naiad.runner.runner import Runner

__all__ = ["InferResult", "Runner", "RunnerModel", "classifications"]
