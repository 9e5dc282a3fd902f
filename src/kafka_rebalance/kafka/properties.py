"""Read a `.properties` file exactly as `java.util.Properties.load` does.

Kafka's tools load `--command-config` with `Utils.loadProps`, i.e. `Properties.load(InputStream)`:
the bytes are ISO-8859-1, so we decode them the same way (a UTF-8 `é` becomes two characters there
too; `\\u00e9` is the portable spelling). The rules, from the JDK's `Properties.load`:

* a natural line ends at `\\n`, `\\r` or `\\r\\n`; a line whose terminator follows an odd number of
  backslashes continues on the next one, whose leading blanks (space, tab, form feed) are dropped;
* a line whose first non-blank character is `#` or `!` is a comment (never continued); blank lines
  are skipped;
* the key runs to the first unescaped `=`, `:` or blank; blanks after it, then one `=` or `:`, then
  blanks again are skipped, and the rest of the line is the value (trailing blanks kept);
* in keys and values `\\t \\n \\r \\f` and `\\uXXXX` are escapes, `\\` before any other character
  stands for that character, a malformed `\\uXXXX` is an error; a lone `\\` at the end of the file
  is dropped; a key given twice keeps its last value.
"""

from __future__ import annotations

from ..errors import InputError

_BLANK = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str):
    n = len(text)
    i = 0
    while i < n:
        while i < n and text[i] in _BLANK + "\r\n":
            i += 1
        if i >= n:
            return
        if text[i] in "#!":
            while i < n and text[i] not in "\r\n":
                i += 1
            continue
        parts: list[str] = []
        while True:
            start = i
            while i < n and text[i] not in "\r\n":
                i += 1
            seg = text[start:i]
            trailing = len(seg) - len(seg.rstrip("\\"))
            if trailing % 2 == 0:
                parts.append(seg)
                break
            parts.append(seg[:-1])
            if i < n and text[i] == "\r":
                i += 1
                if i < n and text[i] == "\n":
                    i += 1
            elif i < n and text[i] == "\n":
                i += 1
            while i < n and text[i] in _BLANK:
                i += 1
            if i >= n or text[i] in "\r\n":
                break  # an empty continuation line ends the logical line
        yield "".join(parts)


def _unescape(s: str, source: str | None, line: str) -> str:
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        i += 1
        if c != "\\":
            out.append(c)
            continue
        if i >= n:
            break
        c = s[i]
        i += 1
        if c == "u":
            digits = s[i : i + 4]
            if len(digits) < 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                # java.util.Properties: IllegalArgumentException("Malformed \\uxxxx encoding.")
                raise InputError(f"Malformed \\uxxxx encoding. in line {line!r}", source=source)
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    n = len(line)
    key_len, value_start, has_sep, escaped = 0, n, False, False
    while key_len < n:
        c = line[key_len]
        if c in "=:" and not escaped:
            value_start, has_sep = key_len + 1, True
            break
        if c in _BLANK and not escaped:
            value_start = key_len + 1
            break
        escaped = c == "\\" and not escaped
        key_len += 1
    while value_start < n:
        c = line[value_start]
        if c not in _BLANK:
            if not has_sep and c in "=:":
                has_sep = True
            else:
                break
        value_start += 1
    return line[:key_len], line[value_start:]


def parse_properties(text: str, source: str | None = None) -> dict[str, str]:
    """Keys and values of a properties text (already decoded), in file order, last value wins."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split(line)
        props[_unescape(key, source, line)] = _unescape(value, source, line)
    return props


def load_properties(path: str) -> dict[str, str]:
    """A properties file read as Kafka's `Utils.loadProps` reads it (bytes as ISO-8859-1)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise InputError("file not found", source=path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=path) from None
    nul = data.find(b"\0")
    if nul >= 0:
        # Java would read it and ignore the garbage keys; a binary file given as client
        # properties (a key store, a certificate in DER) is a mistake worth naming
        line = data.count(b"\n", 0, nul) + 1
        raise InputError(
            f"binary content (a NUL byte on line {line}): not a properties file", source=path
        )
    return parse_properties(data.decode("latin-1"), source=path)
