"""A BentoML 1.4 service over a naiad runner.

    pip install '.[bentoml]'
    cd examples/runner && bentoml serve bentoml_service:NaiadDemo -p 3000

    python -c "import bentoml; print(bentoml.SyncHTTPClient('http://localhost:3000')
               .add_sub(a=[1, 2, 3, 4], b=[1, 1, 1, 1]))"

The runner starts with each worker and stops with it; ``/readyz`` waits for
its models and ``/metrics`` carries naiad's metrics after BentoML's.
"""

from __future__ import annotations

from pathlib import Path

import bentoml
import numpy as np

import naiad
from naiad.integrations.bentoml import RunnerService, http_errors

REPOSITORY = Path(__file__).resolve().parents[1] / "model_repository"


@bentoml.service(traffic={"timeout": 60})
class NaiadDemo(RunnerService):
    runner = naiad.Runner("bentoml-demo", model_repository=REPOSITORY)

    @bentoml.api
    @http_errors  # a wrong input answers 400 with naiad's message
    async def add_sub(self, a: list[float], b: list[float]) -> dict[str, list[float]]:
        result = await self.runner.add_sub.async_run(a, b)
        return {"sum": result["OUTPUT0"].tolist(), "difference": result["OUTPUT1"].tolist()}

    @bentoml.api
    @http_errors
    async def classify(self, image: np.ndarray, top_k: int = 3) -> dict[str, float]:
        """``image``: 8x8 digits (ink 0-16, as in digits.json), one or a batch."""
        batch = np.asarray(image, np.float32).reshape(-1, 8, 8) / 16
        top = self.runner.image_classifier.options(outputs={"PROBABILITIES": top_k})
        result = await top.async_run(batch)
        return naiad.runner.classifications(result["PROBABILITIES"])[0]
