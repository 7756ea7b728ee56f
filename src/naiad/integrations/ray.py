"""naiad on Ray Serve (``pip install 'naiad[ray]'``): Triton's REST protocol through
Ray Serve's HTTP proxy, one naiad server per replica, scaled by Ray.

::

    from naiad.integrations import ray as naiad_ray

    app = naiad_ray.deployment("model_repository", num_replicas=2)
    url = naiad_ray.run(app, port=8080)  # Ray Serve's HTTP proxy on 127.0.0.1:8080
    # tritonclient.http.InferenceServerClient(url) works unchanged

The port is the HTTP proxy's, one per Ray Serve instance (8000 unless
asked): :func:`run` starts Serve with it, as ``serve.start(http_options=...)``
does; ``serve start --http-port 8080`` does the same on a cluster before
``serve run``.

Each replica is the ASGI app of :mod:`naiad.asgi` as a Ray Serve ingress:
the replica's lifespan starts a :class:`naiad.Server` over the repository
(each replica loads every model once, on its own event loop) and stops it
when Ray stops the replica.  Ray's proxy spreads requests over the
replicas, its controller replaces a replica that dies or fails its health
check (a naiad server that is not live), and ``autoscaling_config`` lets it
add and remove replicas with the load.  The repository must be readable
from every node a replica may run on (a shared path, or an ``s3://``/``gs://``
URL naiad reads with fsspec).

What one replica cannot share with another: statistics, metrics, sequence
batching (a sequence's requests must reach the replica that holds its state,
which Ray's proxy does not know) and model control (a load or unload reaches
one replica).  Serve stateless models this way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

try:
    from ray import serve
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"naiad.integrations.ray needs Ray Serve ({exc}): pip install 'naiad[ray]'"
    ) from None

from naiad.asgi import NaiadApp, create_app

__all__ = ["NaiadReplica", "deployment", "run"]


class NaiadReplica:
    """One replica: a naiad server over the repository, answering through its ASGI app."""

    def __init__(self, model_repository: str, settings: dict[str, Any]) -> None:
        self.model_repository = model_repository
        self.settings = settings
        #: not ``app``: Ray's ingress wrapper has a property of that name
        self.naiad_app: NaiadApp | None = None

    def __serve_build_asgi_app__(self) -> NaiadApp:
        """Ray calls this in the replica; its lifespan then starts the server."""
        self.naiad_app = create_app(self.model_repository, **self.settings)
        return self.naiad_app

    def check_health(self) -> None:
        """Ray's periodic check: a replica whose server is not live is replaced."""
        if self.naiad_app is None or not self.naiad_app.server.is_live():
            raise RuntimeError("the naiad server of this replica is not live")


def deployment(
    model_repository: str | Path,
    *,
    num_replicas: int | str | None = None,
    autoscaling_config: dict[str, Any] | None = None,
    ray_actor_options: dict[str, Any] | None = None,
    name: str = "naiad",
    **settings: Any,
) -> Any:
    """A Ray Serve application serving ``model_repository``: pass it to ``serve.run``.

    ``num_replicas`` (or ``"auto"``), ``autoscaling_config`` and
    ``ray_actor_options`` are Ray Serve's deployment options; any other
    keyword is a :class:`naiad.Server` setting given to every replica
    (``model_control_mode="explicit", load_models=("add_sub",)``, say).
    """
    options: dict[str, Any] = {"name": name}
    if num_replicas is not None:
        options["num_replicas"] = num_replicas
    if autoscaling_config is not None:
        options["autoscaling_config"] = autoscaling_config
    if ray_actor_options is not None:
        options["ray_actor_options"] = ray_actor_options
    ingress = serve.ingress()(NaiadReplica)
    replicas = serve.deployment(**options)(ingress)
    return replicas.bind(str(model_repository), dict(settings))


def run(app: Any, *, port: int = 8000, host: str = "127.0.0.1", route_prefix: str = "/") -> str:
    """Start Ray Serve's HTTP proxy on ``host:port`` and run ``app`` (a :func:`deployment`)
    behind it; returns ``"host:port"``, the address tritonclient takes.

    Serve has one proxy per node for all its applications: where Serve
    already runs (``serve start``), its proxy keeps the port it has, and
    Ray logs that the new options are ignored.  ``host="0.0.0.0"`` listens
    on every interface.
    """
    serve.start(http_options={"host": host, "port": port})
    serve.run(app, route_prefix=route_prefix)
    return f"{host}:{port}"
