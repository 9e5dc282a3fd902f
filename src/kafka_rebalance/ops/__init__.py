"""Library operations shared by the public API, the CLI commands and the demo.

Shell level: they may read files or a live cluster, but they never parse arguments or print
tables (that is `commands/`). Each result is a frozen dataclass with `to_json()`, the exact
object the CLI prints under `--format json`.
"""
