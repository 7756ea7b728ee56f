"""The tools around the server, each a ``naiad`` subcommand.

``naiad perf`` measures a model as perf_analyzer does, ``naiad analyze``
searches for its best configuration as Model Analyzer does, ``naiad optimize``
makes a faster copy of it, ``naiad test`` runs the golden requests kept
beside each model, ``naiad export`` writes an app's Python functions as a
model repository.  Each tool's ``command`` module declares its flags
with argparse alone and imports what it needs when it runs, so that
``naiad serve`` starts no slower for them.
"""

#: Subcommand -> the module with its ``HELP``, ``add_arguments(parser)`` and ``run(args)``.
COMMANDS = {
    "perf": "naiad.tools.perf.command",
    "analyze": "naiad.tools.analyze.command",
    "optimize": "naiad.tools.optimize.command",
    "test": "naiad.tools.golden.command",
    "export": "naiad.tools.export",
}
