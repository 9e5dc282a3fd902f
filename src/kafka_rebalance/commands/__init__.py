"""One module per top-level command; each exposes `register(subparsers)`.

A command module sets `func(args) -> int` on its parser; the CLI calls it.
"""

COMMANDS = ("demo", "assign", "simulate", "cluster", "pipeline", "report", "group")
