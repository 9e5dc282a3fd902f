"""Errors users see. Bad input names the file, the field and the value."""

from __future__ import annotations


class InputError(ValueError):
    """Invalid user input; the CLI prints it and exits with code 2."""

    def __init__(
        self, message: str, *, source: str | None = None, field: str | None = None
    ) -> None:
        self.message = message
        self.source = source
        self.field = field
        where = ": ".join(p for p in (source, f"field '{field}'" if field else None) if p)
        super().__init__(f"{where}: {message}" if where else message)

    def in_file(self, source: str) -> InputError:
        """The same error, now naming the file it came from."""
        return self if self.source else InputError(self.message, source=source, field=self.field)


class RuntimeFailure(RuntimeError):
    """A failure at run time (a Spark job lost its output, a cluster unreachable): exit code 1."""
