"""The README's examples, as a test reads them and as `--update` rewrites their output.

A ```console block right after a line `<!-- example -->` holds commands (`$ kafka-rebalance
...`), each followed by what it prints at 80 columns; after `<!-- example: exit 0 -->` only the
exit code is checked (the output has timings or comes from code that is still changing). The
commands run in a scratch folder holding a link to `examples/`, so `out/...` paths land there.

    .venv/bin/python tests/readme_examples.py --update   # rerun every example, rewrite README.md
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
WIDTH = 80
MARK = re.compile(r"^<!-- example(?::\s*(?P<mode>exit 0))? -->\s*$")


@dataclass(frozen=True)
class Example:
    command: str  # as written after `$ `
    output: str  # as the README shows it
    exact: bool  # compare output, else only the exit code
    line: int  # README line of the command (1-based)

    @property
    def argv(self) -> list[str]:
        words = shlex.split(self.command)
        assert words[0] == "kafka-rebalance", self.command
        return words[1:]

    @property
    def spark(self) -> bool:
        return self.argv[0] == "pipeline"


def parse(text: str) -> list[Example]:
    lines = text.splitlines()
    out: list[Example] = []
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if not m:
            i += 1
            continue
        exact = m.group("mode") is None
        assert lines[i + 1].strip() == "```console", f"README line {i + 2}: expected ```console"
        j = i + 2
        cmd, cmd_line, body = None, 0, []
        while lines[j].strip() != "```":
            if lines[j].startswith("$ "):
                if cmd is not None:
                    out.append(Example(cmd, "\n".join(body), exact, cmd_line))
                cmd, cmd_line, body = lines[j][2:], j + 1, []
            else:
                body.append(lines[j])
            j += 1
        if cmd is not None:
            out.append(Example(cmd, "\n".join(body), exact, cmd_line))
        i = j + 1
    return out


def normalise(text: str) -> str:
    """Trailing spaces (rich pads titles) and trailing blank lines do not count."""
    return "\n".join(line.rstrip() for line in text.rstrip("\n").splitlines()).rstrip()


def run(example: Example) -> tuple[int, str]:
    """Run one example in-process in the current folder at 80 columns: (exit code, stdout).

    A Spark job's JVM keeps the folder it started in, so its paths are made absolute here.
    """
    from kafka_rebalance.cli import main

    argv = example.argv
    if example.spark:
        here = Path.cwd()
        argv = [str(here / a) if a.startswith(("out/", "examples/")) else a for a in argv]
    os.environ["COLUMNS"] = str(WIDTH)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(argv)
    return rc, buf.getvalue()


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="readme-examples-"))
    (folder / "examples").symlink_to(ROOT / "examples")
    return folder


def update() -> int:
    """Rerun every example and write what each prints into README.md."""
    text = README.read_text(encoding="utf-8")
    examples = parse(text)
    os.chdir(scratch())
    lines = text.splitlines()
    outputs = []
    for ex in examples:  # in order: later examples read what earlier ones wrote
        rc, out = run(ex)
        if rc != 0:
            print(f"README line {ex.line}: {ex.command} exited {rc}", file=sys.stderr)
            return 1
        outputs.append(out)
    # replace bottom-up so earlier line numbers stay valid
    for ex, out in reversed(list(zip(examples, outputs))):
        start = ex.line  # first output line (0-based index of the line after the command)
        end = start
        while not lines[end].startswith("$ ") and lines[end].strip() != "```":
            end += 1
        lines[start:end] = normalise(out).splitlines()
    README.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(examples)} examples rerun; README.md updated")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    if sys.argv[1:] != ["--update"]:
        print(__doc__)
        sys.exit(2)
    sys.exit(update())
