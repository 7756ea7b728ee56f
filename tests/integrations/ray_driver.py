"""The Ray driver of test_ray.py, in a child process: a local Ray with naiad on Ray
Serve, and a few commands read from stdin (Ray's own imports warn, which the test
process's ``filterwarnings = error`` would turn into failures).

Usage: ``ray_driver.py MODEL_REPOSITORY REPLICAS``; prints ``ready HOST:PORT`` once
Serve answers on a free port, then for each line of stdin: ``replicas`` -> the
running count, ``names`` -> the replica actors' names, ``kill`` -> kills one
replica's actor (Ray's controller starts another) and prints its name,
``quit`` -> shuts Serve and Ray down and exits.
"""

from __future__ import annotations

import os
import socket
import sys
import time
import urllib.request

import ray
from ray import serve
from ray.exceptions import RayActorError, RayTaskError

from naiad.integrations import ray as naiad_ray


def replicas() -> int:
    status = serve.status().applications["default"].deployments["naiad"]
    return int(status.replica_states.get("RUNNING", 0))


def names() -> list[str]:
    """The replica actors alive now (Ray names them ``SERVE_REPLICA::<app>#<deployment>#<id>``)."""
    found = ray.util.list_named_actors(all_namespaces=True)
    return sorted(a["name"] for a in found if a["name"].startswith("SERVE_REPLICA::"))


def kill_one() -> str:
    name = names()[0]
    ray.kill(ray.get_actor(name, namespace="serve"), no_restart=True)
    return name


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve_on_a_free_port(app: serve.Application, tries: int = 5) -> str:
    """Ray's proxy binds its port seconds after the port was found free, and in a
    parallel test run another test's server can take it first; then the proxy
    fails to start, and Serve starts again on another port.  A proxy that Ray's
    controller killed for starting slowly is started again the same way."""
    for attempt in range(1, tries + 1):
        try:
            return start(app, free_port())
        except RayTaskError as exc:
            if "Failed to bind" not in str(exc) or attempt == tries:
                raise
            print(f"the proxy's port was taken ({exc}); trying another", file=sys.stderr)
        except RayActorError as exc:
            if attempt == tries:
                raise
            print(f"the proxy died while starting ({exc}); starting again", file=sys.stderr)
        serve.shutdown()
    raise AssertionError("tries must be at least 1")


def start(app: serve.Application, port: int) -> str:
    """``naiad_ray.run`` on ``port``, returned once Ray's proxy answers there.

    ``serve.start`` gives up on its proxy after 60 s (Ray's fixed
    ``HTTP_PROXY_TIMEOUT``), which a loaded two-core machine can exceed; the
    proxy goes on starting, and a second call joins the Serve that runs."""
    try:
        address = naiad_ray.run(app, port=port)
    except TimeoutError as exc:
        print(f"{exc}: waiting on", file=sys.stderr)
        address = naiad_ray.run(app, port=port)
    deadline = time.monotonic() + 600
    while True:  # Ray's proxy's own health route: not another server on the port
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/healthz", timeout=10) as r:
                if r.status == 200:
                    return address
        except OSError:
            pass
        assert time.monotonic() < deadline, f"Ray's proxy never answered on port {port}"
        time.sleep(0.5)


def main() -> None:
    repository, count = sys.argv[1], int(sys.argv[2])
    # Serve's controller kills a proxy not ready within 5 s, which a loaded 2-core
    # test machine can take many times over just to start the proxy's process;
    # Ray's processes inherit this driver's environment.
    os.environ.setdefault("RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S", "120")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    app = naiad_ray.deployment(repository, num_replicas=count, ray_actor_options={"num_cpus": 0.5})
    print("ready", serve_on_a_free_port(app), flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "replicas":
            print(replicas(), flush=True)
        elif command == "names":
            print(" ".join(names()), flush=True)
        elif command == "kill":
            print(kill_one(), flush=True)
        elif command == "quit":
            break
    serve.shutdown()
    ray.shutdown()
    print("bye", flush=True)


if __name__ == "__main__":
    main()
