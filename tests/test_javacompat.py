"""Java semantics emulation: String/TopicPartition hashing, compareTo order, HashMap/HashSet order.

Golden values below were printed by OpenJDK 17. When a JDK is on PATH the
module also runs a differential test: seeded random sequences of put,
computeIfAbsent, merge, remove, iterator-remove, copy and clear on maps whose
keys collide on purpose (so bins treeify, split and untreeify), replayed in a
real java.util.HashMap and compared order for order.
"""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.assign import javacompat as jc
from kafka_rebalance.assign.javacompat import (
    JavaHashMap,
    JavaHashSet,
    java_compare,
    spread,
    string_hash,
    string_key,
    table_size_for,
    tp_hash,
)


def test_string_hash_known_values() -> None:
    assert string_hash("") == 0
    assert string_hash("hello") == 99162322
    assert string_hash("Aa") == string_hash("BB") == 2112
    assert string_hash("c0") == 3117
    # overflow wraps to a signed 32-bit int
    assert string_hash("consumer-app-3-3534ccae8aa67235-4eac98d6") == _ref_hash(
        "consumer-app-3-3534ccae8aa67235-4eac98d6"
    )
    # a supplementary character hashes as its two UTF-16 surrogates
    assert string_hash("\U0001f600") == _ref_hash("\U0001f600")
    assert string_hash("\U0001f600") == 31 * 0xD83D + 0xDE00


def _ref_hash(s: str) -> int:
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


@given(st.text(max_size=30))
@settings(max_examples=200, deadline=None)
def test_string_hash_matches_reference(s: str) -> None:
    assert string_hash(s) == _ref_hash(s)
    assert -(1 << 31) <= string_hash(s) < (1 << 31)


@given(st.text(max_size=8), st.text(max_size=8))
@settings(max_examples=200, deadline=None)
def test_string_key_orders_by_utf16_units(a: str, b: str) -> None:
    ua = a.encode("utf-16-be", "surrogatepass")
    ub = b.encode("utf-16-be", "surrogatepass")
    want = (ua > ub) - (ua < ub)
    assert java_compare(a, b) == want
    assert ((string_key(a) > string_key(b)) - (string_key(a) < string_key(b))) == want


def test_supplementary_sorts_before_high_bmp() -> None:
    # U+10000 is D800 DC00 in UTF-16, which is below U+FFFF
    assert java_compare("\U00010000", "\uffff") < 0
    assert sorted(["\uffff", "\U00010000"], key=string_key) == ["\U00010000", "\uffff"]


def test_topic_partition_hash() -> None:
    # Kafka: 31 * (31 + partition) + topic.hashCode()
    assert tp_hash("t0", 3) == 31 * 34 + string_hash("t0")
    assert jc.java_hash(("t0", 3)) == tp_hash("t0", 3)


def test_spread_and_table_size() -> None:
    assert spread(0x12345678) == 0x12345678 ^ 0x1234
    assert spread(-1) == -65536  # 0xFFFFFFFF ^ 0x0000FFFF, signed
    assert [table_size_for(c) for c in (0, 1, 2, 3, 16, 17, 100)] == [1, 1, 2, 4, 16, 32, 128]


def _order(m: JavaHashMap) -> list:
    return list(m.keys())


def test_golden_string_order() -> None:
    m = JavaHashMap()
    for i in range(12):
        m.put(f"c{i}", i)
    assert _order(m) == ["c3", "c4", "c5", "c11", "c6", "c10", "c7", "c8", "c9", "c0", "c1", "c2"]
    assert m.capacity == 16
    m = JavaHashMap()
    for i in range(13):
        m.put(f"member-{i}", i)
    assert m.capacity == 32  # 13 > 0.75 * 16
    assert _order(m) == [f"member-{i}" for i in (5, 6, 3, 4, 12, 9, 11, 10, 7, 8, 1, 2, 0)]


def test_golden_treeified_bin_and_removal() -> None:
    m = JavaHashMap(64)
    for i in (5, 3, 9, 1, 7, 11, 0, 2, 4, 10, 8, 6):
        m.put(i * 64, True)  # every key lands in bin 0 of a 64-slot table
    assert _order(m) == [320, 192, 576, 64, 448, 384, 512, 704, 640, 0, 128, 256]
    for i in (3, 9, 0):
        m.remove(i * 64)
    assert _order(m) == [320, 64, 448, 384, 512, 704, 640, 128, 256]


def test_golden_compute_if_absent_inserts_at_bin_head() -> None:
    m = JavaHashMap()
    for k in (0, 16, 32, 48, 1, 17):
        m.compute_if_absent(k, lambda _k: 1)
    assert _order(m) == [48, 32, 16, 0, 17, 1]


def test_map_semantics() -> None:
    m = JavaHashMap()
    assert m.put("a", 1) is None
    assert m.put("a", 2) == 1
    assert m.get("a") == 2 and "a" in m and len(m) == 1
    assert m.remove("a") == 2 and "a" not in m and len(m) == 0
    s = JavaHashSet.copy_of(["x", "y", "x"])
    assert len(s) == 2 and s.to_list() == list(iter(s))
    assert not s.add("x") and s.add("z")


@given(
    st.lists(
        st.tuples(st.sampled_from(["put", "remove", "cia"]), st.integers(0, 4000)), max_size=300
    )
)
@settings(max_examples=60, deadline=None)
def test_order_is_a_permutation_grouped_by_bin(ops) -> None:
    m = JavaHashMap()
    ref: dict = {}
    for op, k in ops:
        k *= 32  # collide on purpose
        if op == "put":
            m.put(k, 1)
            ref[k] = 1
        elif op == "cia":
            m.compute_if_absent(k, lambda _k: 1)
            ref.setdefault(k, 1)
        else:
            m.remove(k)
            ref.pop(k, None)
    keys = _order(m)
    assert sorted(keys) == sorted(ref)
    cap = m.capacity
    if keys:
        bins = [spread(jc.java_hash(k)) & (cap - 1) for k in keys]
        assert bins == sorted(bins)


JAVA_SOURCE = r"""
import java.util.*;
import java.io.*;
public class Diff {
    static final class TP {
        final String topic; final int partition;
        TP(String t, int p) { topic = t; partition = p; }
        public int hashCode() { int r = 31 + partition; r = 31 * r + Objects.hashCode(topic); return r; }
        public boolean equals(Object o) { if (!(o instanceof TP)) return false; TP x = (TP) o; return x.partition == partition && x.topic.equals(topic); }
        public String toString() { return "t:" + topic + ":" + partition; }
    }
    static Object key(String s) {
        if (s.startsWith("t:")) { String[] a = s.split(":"); return new TP(a[1], Integer.parseInt(a[2])); }
        if (s.startsWith("i:")) return Integer.parseInt(s.substring(2));
        return s.substring(2);
    }
    static String ks(Object k) { if (k instanceof TP) return k.toString(); if (k instanceof Integer) return "i:" + k; return "s:" + k; }
    public static void main(String[] args) throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        PrintWriter out = new PrintWriter(new OutputStreamWriter(System.out, "UTF-8"));
        HashMap<Object,Integer> m = null;
        String line;
        while ((line = r.readLine()) != null) {
            String[] a = line.split(" ", 2);
            switch (a[0]) {
                case "NEW": m = a[1].equals("-") ? new HashMap<>() : new HashMap<>(Integer.parseInt(a[1])); break;
                case "PUT": m.put(key(a[1]), 1); break;
                case "CIA": m.computeIfAbsent(key(a[1]), k -> 1); break;
                case "MRG": m.merge(key(a[1]), 1, Integer::sum); break;
                case "REM": m.remove(key(a[1])); break;
                case "IREM": { Object k = key(a[1]); Iterator<Object> it = m.keySet().iterator(); while (it.hasNext()) if (it.next().equals(k)) { it.remove(); break; } break; }
                case "COPY": m = new HashMap<>(m); break;
                case "SETCOPY": { HashSet<Object> s = new HashSet<>(m.keySet()); m = new HashMap<>(); for (Object o : s) m.put(o, 1); break; }
                case "CLEAR": m.clear(); break;
                case "ORDER": { StringBuilder sb = new StringBuilder(); for (Object k : m.keySet()) { sb.append(ks(k)).append('|'); } out.println(sb); break; }
            }
        }
        out.flush();
    }
}
"""


def _gen_ops(rng: random.Random, n_ops: int) -> list[str]:
    kind = rng.choice(["int", "str", "tp", "collide", "mixint"])
    if kind == "int":
        pool = [f"i:{rng.randrange(64) * rng.choice([1, 16, 64, 128, 1024])}" for _ in range(300)]
    elif kind == "mixint":
        pool = [
            f"i:{rng.randrange(40) * 64 + rng.choice([0, 0, 0, 32, 64 * 1024])}" for _ in range(300)
        ]
    elif kind == "str":
        pool = [
            "s:" + rng.choice(["consumer-", "c", "member-", ""]) + str(rng.randrange(3000))
            for _ in range(400)
        ]
    elif kind == "collide":
        pool = [
            "s:" + "".join(rng.choice(["Aa", "BB"]) for _ in range(4)) + rng.choice(["", "x", "y"])
            for _ in range(200)
        ]
    else:
        pool = [f"t:t{rng.randrange(3)}:{rng.randrange(2000)}" for _ in range(600)]
    ops = ["NEW " + rng.choice(["-", "0", "1", "5", "16", "100", "64"])]
    for _ in range(n_ops):
        r = rng.random()
        k = rng.choice(pool)
        if r < 0.45:
            ops.append("PUT " + k)
        elif r < 0.6:
            ops.append("CIA " + k)
        elif r < 0.65:
            ops.append("MRG " + k)
        elif r < 0.85:
            ops.append("REM " + k)
        elif r < 0.9:
            ops.append("IREM " + k)
        elif r < 0.92:
            ops.append("COPY")
        elif r < 0.94:
            ops.append("SETCOPY")
        elif r < 0.945:
            ops.append("CLEAR")
        else:
            ops.append("ORDER")
    ops.append("ORDER")
    return ops


def _pykey(s: str):
    if s.startswith("t:"):
        _, t, p = s.split(":")
        return (t, int(p))
    if s.startswith("i:"):
        return int(s[2:])
    return s[2:]


def _ks(k) -> str:
    if isinstance(k, tuple):
        return f"t:{k[0]}:{k[1]}"
    if isinstance(k, int):
        return f"i:{k}"
    return "s:" + k


def _replay(ops: list[str]) -> list[str]:
    out = []
    m = JavaHashMap()
    for op in ops:
        cmd, _, arg = op.partition(" ")
        if cmd == "NEW":
            m = JavaHashMap() if arg == "-" else JavaHashMap(int(arg))
        elif cmd == "PUT":
            m.put(_pykey(arg), 1)
        elif cmd == "CIA":
            m.compute_if_absent(_pykey(arg), lambda _k: 1)
        elif cmd == "MRG":
            m.merge_insert(_pykey(arg), 1, lambda a, b: a + b)
        elif cmd == "REM":
            m.remove(_pykey(arg))
        elif cmd == "IREM":
            m.remove(_pykey(arg), movable=False)
        elif cmd == "COPY":
            m = JavaHashMap.copy_of(m)
        elif cmd == "SETCOPY":
            s = JavaHashSet.copy_of(m.keys())
            m = JavaHashMap()
            for k in s:
                m.put(k, 1)
        elif cmd == "CLEAR":
            m.clear()
        elif cmd == "ORDER":
            out.append("".join(_ks(k) + "|" for k in m.keys()))
    return out


@pytest.fixture(scope="module")
def java_diff(tmp_path_factory):
    javac, java = shutil.which("javac"), shutil.which("java")
    if not javac or not java:
        pytest.skip("no JDK on PATH for the differential test")
    d = tmp_path_factory.mktemp("javadiff")
    (d / "Diff.java").write_text(JAVA_SOURCE, encoding="utf-8")
    subprocess.run([javac, "Diff.java"], cwd=d, check=True, capture_output=True, timeout=120)
    version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    feature = int(version.split('"')[1].split(".")[0]) if '"' in version else 17
    return java, d, feature


def test_differential_against_java_hashmap(java_diff) -> None:
    java, d, feature = java_diff
    old = jc.jdk_feature()
    jc.set_jdk(feature)
    try:
        seqs = []
        for seed in range(80):
            rng = random.Random(seed)
            seqs.append(_gen_ops(rng, rng.choice([50, 300, 1500])))
        payload = "\n".join(op for ops in seqs for op in ops) + "\n"
        res = subprocess.run(
            [java, "-cp", str(d), "Diff"],
            input=payload,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        want = res.stdout.splitlines()
        got = [line for ops in seqs for line in _replay(ops)]
        assert len(want) == len(got)
        for i, (w, g) in enumerate(zip(want, got)):
            assert w == g, f"order #{i} differs"
    finally:
        jc.set_jdk(old)


@given(
    st.lists(
        st.one_of(st.integers(0, 1 << 20).map(lambda i: i * 64), st.text(max_size=5)),
        unique=True,
        max_size=400,
    ),
    st.booleans(),
)
@settings(max_examples=80, deadline=None)
def test_bulk_insertion_order_matches_emulation(keys, head: bool) -> None:
    m = JavaHashMap()
    for k in keys:
        if head:
            m.compute_if_absent(k, lambda _k: 1)
        else:
            m.put(k, 1)
    assert jc.insertion_order(keys, head=head) == list(m.keys())


def test_bulk_insertion_order_falls_back_when_bins_treeify() -> None:
    keys = [i * 4096 for i in range(300)]  # one bin at every table size up to 4096
    for head in (False, True):
        m = JavaHashMap()
        for k in keys:
            (m.compute_if_absent(k, lambda _k: 1) if head else m.put(k, 1))
        assert jc.insertion_order(keys, head=head) == list(m.keys())
    names = [f"topic-{i}" for i in range(5000)]
    m = JavaHashMap()
    for k in names:
        m.put(k, 1)
    assert jc.insertion_order(names) == list(m.keys())
