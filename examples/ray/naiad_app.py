"""naiad on Ray Serve: the example repository behind Ray's HTTP proxy, two replicas.

    serve run naiad_app:app --app-dir examples/ray     # on a running cluster, or a local one
    python examples/ray/naiad_app.py --port 8080         # a local Ray, a client call, shut down

``serve run`` serves on Ray Serve's port, 8000 unless Serve was started on
another (``serve start --http-port 8080`` on the cluster first).
``NAIAD_MODEL_REPOSITORY`` names another repository (every node must be able to
read it: a shared path or an s3:// / gs:// URL).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from naiad.integrations import ray as naiad_ray

REPOSITORY = os.environ.get(
    "NAIAD_MODEL_REPOSITORY", str(Path(__file__).resolve().parents[1] / "model_repository")
)

app = naiad_ray.deployment(
    REPOSITORY,
    num_replicas=2,
    ray_actor_options={"num_cpus": 0.5},
    # or, instead of num_replicas, let Ray follow the load:
    # autoscaling_config={"min_replicas": 1, "max_replicas": 4, "target_ongoing_requests": 8},
)


def main() -> None:
    import numpy as np
    import ray
    import tritonclient.http as httpclient
    from ray import serve

    parser = argparse.ArgumentParser(description="naiad on a local Ray Serve, one call")
    parser.add_argument("--port", type=int, default=8000, help="Ray Serve's HTTP port")
    args = parser.parse_args()
    ray.init(num_cpus=2, include_dashboard=False)
    url = naiad_ray.run(app, port=args.port)
    client = httpclient.InferenceServerClient(url)
    a = np.arange(4, dtype=np.float32)
    inputs = [httpclient.InferInput(n, [4], "FP32") for n in ("INPUT0", "INPUT1")]
    for tensor in inputs:
        tensor.set_data_from_numpy(a)
    result = client.infer("add_sub", inputs)
    print("OUTPUT0 =", result.as_numpy("OUTPUT0"), " OUTPUT1 =", result.as_numpy("OUTPUT1"))
    serve.shutdown()
    ray.shutdown()


if __name__ == "__main__":
    main()
