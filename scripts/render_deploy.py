#!/usr/bin/env python
"""Render the Helm chart ``deploy/helm/naiad`` into plain manifests under ``deploy/kubernetes/``.

The plain manifests serve clusters without Helm (``kubectl apply -f``), and they let
CI validate what the chart produces where no Helm is installed: each file starts
with a fingerprint of the chart files it was rendered from, and
``tests/deploy/test_helm.py`` fails when the chart changed without a new render.

Rendering uses Helm's own Go SDK (the template engine of ``helm template``) through
``pip install helm-python-sdk`` (import name ``helm_python``); no helm binary or
cluster is needed.  ``python scripts/render_deploy.py`` writes the files,
``--check`` only compares them.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "deploy" / "helm" / "naiad"
OUT = ROOT / "deploy" / "kubernetes"
RELEASE = "naiad"
NAMESPACE = "default"

#: Plain manifest -> the chart's values file it renders (chart-testing's ``ci/`` folder).
RENDERS = {"naiad.yaml": "ci/pvc-values.yaml", "naiad-full.yaml": "ci/full-values.yaml"}

#: Helm's install order for the kinds the chart has, so ``kubectl apply`` creates
#: what a pod refers to before the pod.
KIND_ORDER = [
    "ServiceAccount",
    "Service",
    "Deployment",
    "PodDisruptionBudget",
    "HorizontalPodAutoscaler",
    "ServiceMonitor",
]
FINGERPRINT = "# chart-fingerprint: "


def chart_fingerprint(chart: Path = CHART) -> str:
    """sha256 over the chart's files (path and bytes), so any edit changes it."""
    digest = hashlib.sha256()
    for path in sorted(p for p in chart.rglob("*") if p.is_file()):
        digest.update(path.relative_to(chart).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def values_of(values_file: str, chart: Path = CHART) -> dict[str, Any]:
    loaded = yaml.safe_load((chart / values_file).read_text())
    return dict(loaded or {})


def render(values: dict[str, Any], chart: Path = CHART) -> dict[str, str]:
    """Each template's output as ``helm template`` renders it (NOTES.txt and empty ones left out)."""
    import helm_python

    with helm_python.Chart.load(str(chart)) as loaded:
        out = loaded.render(values, name=RELEASE, namespace=NAMESPACE)
    return {
        name: text
        for name, text in out.items()
        if not name.endswith("NOTES.txt") and yaml.safe_load(text) is not None
    }


def manifest(values_file: str, chart: Path = CHART) -> str:
    """One plain manifest: the fingerprint line, then the chart's objects in install order."""
    rendered = render(values_of(values_file, chart), chart)

    def order(item: tuple[str, str]) -> tuple[int, str]:
        kind = yaml.safe_load(item[1])["kind"]
        return KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER), item[0]

    head = (
        f"{FINGERPRINT}{chart_fingerprint(chart)}\n"
        f"# Rendered from deploy/helm/naiad with {values_file} by scripts/render_deploy.py;\n"
        "# edit the chart and re-render rather than editing this file.\n"
    )
    parts = [
        f"---\n# Source: {name}\n{text.strip()}\n"
        for name, text in sorted(rendered.items(), key=order)
    ]
    return head + "".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    stale = []
    for name, values_file in RENDERS.items():
        text = manifest(values_file)
        path = OUT / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print(f"out of date: {', '.join(stale)}; run python scripts/render_deploy.py")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
