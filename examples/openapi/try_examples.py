"""Send every example request of a naiad server's OpenAPI document, as it is, and print
the answers: what "Try it out" on http://localhost:8000/docs/ does, for every model.

    python examples/openapi/try_examples.py [--url localhost:8000]
"""

from __future__ import annotations

import argparse
import json
import urllib.error
import urllib.request


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="localhost:8000", help="the HTTP port: host:port")
    base = "http://" + parser.parse_args().url
    with urllib.request.urlopen(base + "/openapi.json", timeout=30) as answer:
        doc = json.load(answer)
    print(f"{doc['info']['title']} {doc['info']['version']}: models {doc['x-naiad-models']}")
    failed = 0
    for path, item in doc["paths"].items():
        post = item.get("post")
        if post is None:
            continue
        example = post["requestBody"]["content"]["application/json"]["example"]
        request = urllib.request.Request(
            base + path, json.dumps(example).encode(), {"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                text = answer.read().decode()
            print(f"POST {path}: {answer.status} {text[:160]}")
        except urllib.error.HTTPError as exc:
            failed += 1
            print(f"POST {path}: {exc.code} {exc.read().decode()}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
