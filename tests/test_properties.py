"""`--command-config` files read as java.util.Properties reads them, checked against Java itself."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from kafka_rebalance.errors import InputError
from kafka_rebalance.kafka.properties import load_properties, parse_properties

# Tricky files: separators, escapes, continuations, comments, blanks, CRLF, ISO-8859-1 bytes.
CASES: list[bytes] = [
    b"a=1\nb = 2\nc:3\nd 4\ne\tf\n  g  =  5  \nh=\ni\n",
    b"# comment\n! also\n   # indented comment\nk=v # not a comment\n",
    b"key=one \\\n    two \\\n\tthree\nnext=x\n",
    b"cont=a\\\n\nafter=1\n",
    b"x=\\\\\ny=z\n",
    b"esc\\ key\\:\\==v\\tw\\nx\\u0041\\q\n",
    b"crlf=1\r\nmac=2\rlast=3",
    b"dup=1\ndup=2\n",
    b"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\r\n"
    b'   username="alice" \\\n   password="s3cr=t:x";\n',
    b"latin=caf\xe9\nuni=caf\\u00e9\n",
    b"eof=trailing\\",
    b"=emptykey\n:also\n  \n\t\f\n",
    b"# comment ends with backslash \\\nreal=1\n",
    b"a==b\nc=:d\ne  : = f\n",
]

JAVA = r"""
import java.io.*; import java.util.*;
public class P { public static void main(String[] a) throws Exception {
  StringBuilder out = new StringBuilder("[");
  for (int i = 0; i < a.length; i++) {
    Properties p = new Properties();
    try (InputStream in = new FileInputStream(a[i])) { p.load(in); }
    TreeMap<String,String> m = new TreeMap<>(); for (String k : p.stringPropertyNames()) m.put(k, p.getProperty(k));
    out.append(i > 0 ? "," : "").append("{");
    int j = 0;
    for (Map.Entry<String,String> e : m.entrySet()) {
      out.append(j++ > 0 ? "," : "").append(q(e.getKey())).append(":").append(q(e.getValue()));
    }
    out.append("}");
  }
  System.out.println(out.append("]"));
}
static String q(String s) { StringBuilder b = new StringBuilder("\""); for (char c : s.toCharArray())
  b.append(String.format("\\u%04x", (int) c)); return b.append("\"").toString(); }
}
"""


def test_parse_properties_basics() -> None:
    got = parse_properties(CASES[0].decode("latin-1"))
    assert got == {"a": "1", "b": "2", "c": "3", "d": "4", "e": "f", "g": "5  ", "h": "", "i": ""}
    assert parse_properties(CASES[2].decode())["key"] == "one two three"
    assert parse_properties(CASES[5].decode()) == {"esc key:=": "v\tw\nxAq"}


def test_malformed_unicode_escape_is_an_input_error(tmp_path) -> None:
    f = tmp_path / "bad.properties"
    f.write_bytes(b"k=\\u12x4\n")
    with pytest.raises(InputError, match="Malformed") as err:
        load_properties(str(f))
    assert err.value.source == str(f)
    with pytest.raises(InputError, match="not found"):
        load_properties(str(tmp_path / "missing.properties"))


@pytest.mark.skipif(shutil.which("java") is None, reason="java is not on PATH")
def test_same_keys_and_values_as_java_util_properties(tmp_path) -> None:
    files = []
    for i, data in enumerate(CASES):
        f = tmp_path / f"c{i}.properties"
        f.write_bytes(data)
        files.append(str(f))
    src = tmp_path / "P.java"
    src.write_text(JAVA)
    out = subprocess.run(
        ["java", str(src), *files], capture_output=True, text=True, timeout=120, check=True
    )
    java = json.loads(out.stdout)
    for f, expected in zip(files, java):
        assert load_properties(f) == expected, f
