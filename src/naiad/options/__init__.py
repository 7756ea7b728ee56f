"""The server's options: each declared once with its flag, help and group.

``declarations`` holds ``ServerOptions`` and its fields, each made by
``fields``' ``option()`` with its flag, help and area; ``flags`` makes
``naiad serve``'s arguments from them, ``values`` parses and checks what a
flag is given, and ``triton_flags`` lists Triton's flags that naiad accepts
without effect.  The command line, ``--help``, the Runner and the README's
table all read from here, so an option is added in one place.
"""

from naiad.options.declarations import ServerOptions

__all__ = ["ServerOptions"]
