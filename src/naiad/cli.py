"""The ``naiad`` command: ``serve`` a model repository, ``check`` one for problems,
and the tools (``perf``, ``analyze``, ``optimize``, ``test``: :mod:`naiad.tools`).

Option names are Triton's where Triton has one, so existing launch scripts
carry over (``--model-repository``, ``--http-port``, ``--load-model``, ...).
The flags themselves are declared with the options they set
(:mod:`naiad.options.declarations`, made into arguments by :mod:`naiad.options.flags`)
and the serving loop is :mod:`naiad.foreground`; this module only wires
subcommands to them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

from naiad._version import TRITON_VERSION, __version__
from naiad.options import ServerOptions
from naiad.options.flags import add_flag, add_serve_flags, options_from_args
from naiad.tools import COMMANDS

DESCRIPTION = (
    "A Triton-compatible inference server. 'naiad serve' serves model repositories over "
    "Triton's HTTP and gRPC protocols; 'naiad check' prints every problem of a repository."
)


def build_parser() -> argparse.ArgumentParser:
    """The ``naiad`` command's parser: its subcommands and their flags."""
    parser = argparse.ArgumentParser(prog="naiad", description=DESCRIPTION)
    parser.add_argument(
        "--version",
        action="version",
        version=f"naiad {__version__} (Triton {TRITON_VERSION} protocols)",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser(
        "serve",
        help="serve one or more model repositories",
        description="Serve model repositories over Triton's HTTP/REST and gRPC protocols "
        "until SIGINT or SIGTERM, which drain in-flight requests. Switches take "
        "Triton's --flag=true/false spelling; --flag alone is true.",
    )
    serve.add_argument(
        "apps", nargs="*", metavar="APP",
        help="Python files or modules (app.py, package.module[:name]) whose @naiad.model "
        "functions are served too (docs/python-models.md)",
    )  # fmt: skip
    add_serve_flags(serve)

    check = sub.add_parser("check", help="validate a model repository and print every problem")
    check.add_argument("repositories", nargs="+", metavar="REPO")
    add_flag(check, "disable_auto_complete_config")
    add_flag(check, "backend_config")  # settings a load reads, such as fil,allow-pickle=true

    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        tool = sub.add_parser(name, help=module.HELP, description=module.__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
        module.add_arguments(tool)
        tool.set_defaults(tool=module)
    return parser


def check(args: argparse.Namespace) -> int:
    from naiad.engine.check import check_repositories
    from naiad.options.values import backend_config

    report = check_repositories(
        [Path(r) for r in args.repositories],
        disable_auto_complete_config=args.disable_auto_complete_config,
        backend_config=backend_config(args.backend_config, {}),
    )
    for problem in report.problems:
        print(problem)
    print(report.summary())
    return 1 if report.problems else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "tool", None) is not None:
        from naiad.tools.console import line_buffered

        line_buffered()  # a tool piped into tee or a CI log shows each line as it is written
        return int(args.tool.run(args))
    if args.command == "check":
        return check(args)
    options = options_from_args(args)
    if args.apps:
        options = _with_apps(options, args)
    if options.workers > 1:
        from naiad.cluster import supervisor

        serve_args = list(sys.argv[1:] if argv is None else argv)
        return supervisor.run(options, serve_args)
    from naiad import foreground

    return foreground.run(options)


def _with_apps(options: ServerOptions, args: argparse.Namespace) -> ServerOptions:
    """The apps' models as one more repository (in a temporary folder); without
    --model-repository, only them (not the bundled examples)."""
    import dataclasses

    from naiad.functions.export import serve_apps, temporary_folder
    from naiad.functions.spec import SpecError

    folder = temporary_folder()
    try:
        serve_apps(list(args.apps), folder)
    except (SpecError, OSError) as exc:
        raise SystemExit(f"naiad: {exc}") from None
    given = [r for r in (args.model_repository or ()) if r]
    repos = (*options.model_repositories, folder) if given else (folder,)
    return dataclasses.replace(options, model_repositories=repos)


if __name__ == "__main__":
    sys.exit(main())
