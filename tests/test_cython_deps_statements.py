"""`cython_deps.statements` (how the stamps' cimport scan reads a Cython source) against the
per-character reading it replaced (39bcd7e's, kept here as the reference): the same logical
statements for every `.pyx` and `.pxd` of the repository and for random texts made of the
characters that matter (quotes, backslashes, `#`, `;`, brackets, CR and LF), so the faster reading
decides the same dependencies (tests/test_native_stamps.py checks the forms one by one). The scan
is cached by a source's text: a source edited in the same process is read again."""

from __future__ import annotations

from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kafka_rebalance.cython_deps import cython_digest, pxd_dependencies, statements

ROOT = Path(__file__).resolve().parent.parent


def statements_by_character(text: str) -> list[str]:
    """39bcd7e's `statements`, as it was: one character at a time."""
    out: list[str] = []
    current: list[str] = []
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    depth = i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else ch
            i += len(quote)
            while i < n and not text.startswith(quote, i) and (len(quote) == 3 or text[i] != "\n"):
                i += 2 if text[i] == "\\" else 1
            i += len(quote)
            current.append('""')
            continue
        if ch == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if ch == "\\" and text[i + 1 : i + 2] == "\n":
            current.append(" ")
            i += 2
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(depth - 1, 0)
        if ch == ";" or ch == "\n" and depth == 0:
            out.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
        i += 1
    out.append("".join(current).strip())
    return [st for st in out if st]


def test_every_cython_source_of_the_repository_reads_the_same() -> None:
    sources = [
        p
        for folder in ("src", "bench", "tests")
        for pattern in ("*.pyx", "*.pxd")
        for p in (ROOT / folder).rglob(pattern)
    ]
    assert len(sources) > 20
    for source in sources:
        text = source.read_text(encoding="utf-8")
        assert statements(text) == statements_by_character(text), source


PIECES = [
    '"', "'", '"""', "'''", "\\", "#", ";", "(", ")", "[", "]", "{", "}", "\n", "\r", "\r\n",
    " ", "  ", "a", "x1", "cimport", "from", ".", ",", "as", "r", "b",
]  # fmt: skip


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
@example('s = "a\\\nb"; t = 1\n')  # a continuation inside a string
@example("x = 'open\ncimport b\n")  # a string left open at its line's end takes the newline
@example('"""doc \\""" still""" ; cimport c')  # an escaped quote inside a triple-quoted one
@example('""""a"""" \\')  # four quotes; a lone backslash at the end
@example("'''a''''\\")
@example("(\n'''x\n''')\n;\\\r\n)")
def test_random_texts_read_the_same(text: str) -> None:
    assert statements(text) == statements_by_character(text)


def test_a_source_edited_in_the_process_is_read_again(tmp_path: Path) -> None:
    """The scan is cached by a source's text (`cython_deps._cimports`): the same file edited later
    in the same process names its new cimports, and the stamp follows."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name in ("b", "c"):
        (pkg / f"{name}.pxd").write_text(f"cdef int {name}_x\n")
    pyx = pkg / "a.pyx"
    pyx.write_text("from . cimport b\n")
    assert pxd_dependencies(pyx) == [pkg / "b.pxd"]
    before = cython_digest(pyx)
    pyx.write_text("from . cimport c\n")
    assert pxd_dependencies(pyx) == [pkg / "c.pxd"]
    assert cython_digest(pyx) != before
    pyx.write_text("from . cimport b\n")
    assert cython_digest(pyx) == before
