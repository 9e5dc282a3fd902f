"""Parity with Apache Kafka's StickyAssignor and CooperativeStickyAssignor.

Every shared vector (assignors/ and assignors-large/), every round, fed back
with run_rounds; each member's partitions compared as a set, as the vectors'
README prescribes. Plus, where a JDK and the apache/kafka source mirror are
available, a differential run against Kafka's own classes on random groups.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from kafka_rebalance.assign.rounds import next_round_spec, run_rounds
from kafka_rebalance.assign.sticky import CooperativeStickyAssignor, StickyAssignor
from kafka_rebalance.assign.sticky_common import KafkaAssignorFailure
from kafka_rebalance.model import GroupSpec, MemberSubscription, TopicMetadata, TopicPartition, parse_group_scenario

VECTORS = Path(__file__).resolve().parents[1].parent / "shared" / "vectors"
ASSIGNORS = {"sticky": StickyAssignor, "cooperative-sticky": CooperativeStickyAssignor}


def _vector_files() -> list[Path]:
    return sorted((VECTORS / "assignors").glob("*.json")) + sorted((VECTORS / "assignors-large").glob("*.json"))


_CACHE: dict[Path, dict] = {}


def _load(path: Path) -> dict:
    if path not in _CACHE:
        _CACHE.clear()  # at most one (possibly 3 MB) document in memory
        _CACHE[path] = json.loads(path.read_text(encoding="utf-8"))
    return _CACHE[path]


def _cases():
    for path in _vector_files():
        for name in ASSIGNORS:
            yield pytest.param(path, name, id=f"{path.parent.name}/{path.stem}-{name}")


def test_vectors_present(vectors_dir) -> None:
    assert len(_vector_files()) >= 200


@pytest.mark.parametrize("path,assignor_name", list(_cases()))
def test_vector(path: Path, assignor_name: str, vectors_dir) -> None:
    doc = _load(path)
    expected = doc["expected"][assignor_name]
    scenario = parse_group_scenario(doc)
    assert len(expected) == scenario.rounds
    assignor = ASSIGNORS[assignor_name]()
    assert assignor.name == assignor_name
    results = run_rounds(assignor, scenario.spec, scenario.rounds)
    for rnd, ((_, got), want) in enumerate(zip(results, expected), start=1):
        got_sets = {m: {(tp.topic, tp.partition) for tp in tps} for m, tps in got.items() if tps}
        want_sets = {m: {(t, p) for t, p in tps} for m, tps in want.items() if tps}
        assert got_sets == want_sets, f"{path.name} {assignor_name} round {rnd} differs"
        for tps in got.values():
            assert len(tps) == len(set(tps)), "a member got the same partition twice"


# ----------------------------------------------------------------------------- Kafka's own classes
#
# Beyond the stored vectors: when a JDK and the mirrored apache/kafka source are on
# this machine, compile Kafka's AbstractStickyAssignor, CooperativeStickyAssignor and
# what they need (a handful of stubs replace logging and wire-format classes they do
# not use here), then compare both assignors with ours on seeded random groups,
# two rounds each. StickyAssignor's user data is handed over already decoded (owned
# partitions grouped by topic in HashMap order, generation), as its memberData reads it.

KAFKA_GIT = Path(os.environ.get("KAFKA_SOURCE_REPO", Path(__file__).resolve().parents[2] / ".mirror" / "apache+kafka" / "repo"))
KAFKA_FILES = [
    "clients/consumer/ConsumerPartitionAssignor", "clients/consumer/internals/AbstractPartitionAssignor",
    "clients/consumer/internals/AbstractStickyAssignor", "clients/consumer/internals/Utils",
    "clients/consumer/CooperativeStickyAssignor", "clients/consumer/ConsumerGroupMetadata",
    "common/Cluster", "common/ClusterResource", "common/utils/CollectionUtils", "common/PartitionInfo",
    "common/Node", "common/TopicPartition", "common/TopicIdPartition", "common/Uuid", "common/Configurable",
    "common/KafkaException",
]
STUBS = {'org/apache/kafka/common/protocol/types/Field.java': 'package org.apache.kafka.common.protocol.types;\npublic class Field { public final String name; public Field(String name, Type t) { this.name = name; } }\n', 'org/apache/kafka/common/protocol/types/Struct.java': 'package org.apache.kafka.common.protocol.types;\nimport java.util.*;\npublic class Struct {\n    final Map<String, Object> values = new HashMap<>();\n    public Struct(Schema s) {}\n    public Struct set(String name, Object v) { values.put(name, v); return this; }\n    public Integer getInt(String name) { return (Integer) values.get(name); }\n}\n', 'org/apache/kafka/common/protocol/types/Type.java': 'package org.apache.kafka.common.protocol.types;\npublic class Type { public static final Type INT32 = new Type(); }\n', 'org/apache/kafka/common/protocol/types/Schema.java': 'package org.apache.kafka.common.protocol.types;\nimport java.nio.ByteBuffer;\n/** Only the single-INT32 schema CooperativeStickyAssignor uses. */\npublic class Schema {\n    final Field[] fields;\n    public Schema(Field... fields) { this.fields = fields; }\n    public int sizeOf(Object o) { return 4 * fields.length; }\n    public void write(ByteBuffer b, Object o) { Struct s = (Struct) o; for (Field f : fields) b.putInt((Integer) s.values.get(f.name)); }\n    public Struct read(ByteBuffer b) { Struct s = new Struct(this); for (Field f : fields) s.set(f.name, b.getInt()); return s; }\n}\n', 'org/apache/kafka/common/requests/JoinGroupRequest.java': 'package org.apache.kafka.common.requests;\npublic class JoinGroupRequest { public static final int UNKNOWN_GENERATION_ID = -1; public static final String UNKNOWN_MEMBER_ID = ""; }\n', 'org/apache/kafka/common/utils/Utils.java': 'package org.apache.kafka.common.utils;\npublic class Utils {\n    public static <T> Class<? extends T> loadClass(String klass, Class<T> base) throws ClassNotFoundException { throw new ClassNotFoundException(klass); }\n    public static <T> T newInstance(Class<T> c) { throw new UnsupportedOperationException(); }\n}\n', 'org/slf4j/Logger.java': 'package org.slf4j;\npublic class Logger {\n    public boolean isDebugEnabled() { return false; }\n    public boolean isTraceEnabled() { return false; }\n    public boolean isInfoEnabled() { return false; }\n    public void debug(String m, Object... a) {}\n    public void info(String m, Object... a) {}\n    public void warn(String m, Object... a) {}\n    public void error(String m, Object... a) {}\n    public void trace(String m, Object... a) {}\n}\n', 'org/slf4j/LoggerFactory.java': 'package org.slf4j;\npublic class LoggerFactory {\n    public static Logger getLogger(Class<?> c) { return new Logger(); }\n    public static Logger getLogger(String c) { return new Logger(); }\n}\n'}
HARNESS = r"""package org.apache.kafka.clients.consumer;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor.MemberData;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor;
import org.apache.kafka.common.utils.CollectionUtils;

import java.io.*;
import java.nio.ByteBuffer;
import java.util.*;

/** Reads scenarios on stdin (blank-line separated), prints Kafka's assignment per member. */
public class StickyHarness {
    static final Map<Subscription, MemberData> EAGER_DATA = new IdentityHashMap<>();

    /** StickyAssignor with its user data already decoded: owned partitions grouped by topic, generation. */
    static final class EagerSticky extends AbstractStickyAssignor {
        public String name() { return "sticky"; }
        protected MemberData memberData(Subscription subscription) {
            MemberData md = EAGER_DATA.get(subscription);
            return md != null ? md : new MemberData(Collections.emptyList(), Optional.empty(), subscription.rackId());
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        PrintWriter out = new PrintWriter(new OutputStreamWriter(System.out, "UTF-8"));
        String line;
        List<String> block = new ArrayList<>();
        while ((line = r.readLine()) != null) {
            if (line.equals("END")) { run(block, out); block.clear(); out.flush(); }
            else block.add(line);
        }
        out.flush();
    }

    static void run(List<String> block, PrintWriter out) {
        String assignorName = null;
        Map<String, Node> rackNodes = new HashMap<>();
        Node noRack = new Node(1000000, "h", 1);
        List<PartitionInfo> parts = new ArrayList<>();
        Map<String, Subscription> subs = new HashMap<>();
        int nodeId = 0;
        for (String l : block) {
            String[] a = l.split(" ", -1);
            if (a[0].equals("ASSIGNOR")) assignorName = a[1];
            else if (a[0].equals("TOPIC")) {
                String topic = a[1]; int n = Integer.parseInt(a[2]);
                String[] racksPer = a.length > 3 && !a[3].isEmpty() ? a[3].split(";", -1) : new String[0];
                for (int p = 0; p < n; p++) {
                    List<Node> reps = new ArrayList<>();
                    if (p < racksPer.length && !racksPer[p].isEmpty()) {
                        for (String rack : racksPer[p].split(",")) {
                            Node nd = rackNodes.get(rack);
                            if (nd == null) { nd = new Node(nodeId++, "h", 1, rack); rackNodes.put(rack, nd); }
                            reps.add(nd);
                        }
                    } else reps.add(noRack);
                    Node[] arr = reps.toArray(new Node[0]);
                    parts.add(new PartitionInfo(topic, p, arr[0], arr, arr));
                }
            } else if (a[0].equals("MEMBER")) {
                String id = a[1]; int gen = Integer.parseInt(a[2]); String rack = a[3];
                List<String> topics = a[4].isEmpty() ? new ArrayList<>() : Arrays.asList(a[4].split(","));
                List<TopicPartition> owned = new ArrayList<>();
                if (!a[5].isEmpty()) for (String tp : a[5].split(",")) {
                    int i = tp.lastIndexOf(':');
                    owned.add(new TopicPartition(tp.substring(0, i), Integer.parseInt(tp.substring(i + 1))));
                }
                ByteBuffer ud = null;
                MemberData eager = null;
                if (assignorName.equals("sticky")) {
                    List<TopicPartition> grouped = new ArrayList<>();
                    for (Map.Entry<String, List<Integer>> e : CollectionUtils.groupPartitionsByTopic(owned).entrySet())
                        for (Integer p : e.getValue()) grouped.add(new TopicPartition(e.getKey(), p));
                    if (!owned.isEmpty() || gen >= 0)
                        eager = new MemberData(grouped, gen >= 0 ? Optional.of(gen) : Optional.empty());
                } else if (gen >= 0) {
                    ud = ByteBuffer.allocate(4); ud.putInt(gen); ud.flip();
                }
                Subscription sub = new Subscription(topics, ud, owned, gen, rack.isEmpty() ? Optional.empty() : Optional.of(rack));
                if (eager != null) EAGER_DATA.put(sub, eager);
                subs.put(id, sub);
            }
        }
        List<Node> nodes = new ArrayList<>(rackNodes.values()); nodes.add(noRack);
        Cluster cluster = new Cluster("c", nodes, parts, Collections.emptySet(), Collections.emptySet());
        ConsumerPartitionAssignor assignor = assignorName.equals("sticky") ? new EagerSticky() : new CooperativeStickyAssignor();
        try {
            Map<String, ConsumerPartitionAssignor.Assignment> res = assignor.assign(cluster, new GroupSubscription(subs)).groupAssignment();
            for (Map.Entry<String, ConsumerPartitionAssignor.Assignment> e : res.entrySet()) {
                StringBuilder sb = new StringBuilder("M ").append(e.getKey()).append(' ');
                for (TopicPartition tp : e.getValue().partitions()) sb.append(tp.topic()).append(':').append(tp.partition()).append(',');
                out.println(sb);
            }
        } catch (Exception ex) {
            out.println("EXC " + ex.getClass().getSimpleName());
        }
        out.println("DONE");
    }
}
"""


@pytest.fixture(scope="module")
def kafka_harness(tmp_path_factory):
    javac, java, git = shutil.which("javac"), shutil.which("java"), shutil.which("git")
    if not (javac and java and git) or not KAFKA_GIT.exists():
        pytest.skip("needs a JDK and the apache/kafka source mirror")
    root = tmp_path_factory.mktemp("kafka")
    src = root / "src"
    for f in KAFKA_FILES:
        rel = f"org/apache/kafka/{f}.java"
        text = subprocess.run([git, "-C", str(KAFKA_GIT), "show", f"HEAD:clients/src/main/java/{rel}"],
                              capture_output=True, text=True, check=True).stdout
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text, encoding="utf-8")
    for rel, text in STUBS.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text, encoding="utf-8")
    harness = src / "org/apache/kafka/clients/consumer/StickyHarness.java"
    harness.write_text(HARNESS, encoding="utf-8")
    classes = root / "classes"
    classes.mkdir()
    subprocess.run([javac, "-nowarn", "-d", str(classes), "-sourcepath", str(src), str(harness)],
                   check=True, capture_output=True, timeout=300)
    return java, classes


def _block(spec, name: str) -> str:
    lines = [f"ASSIGNOR {name}"]
    for t, meta in spec.topics.items():
        racks = ";".join(",".join(sorted(meta.racks_of(p))) for p in range(meta.partitions)) if meta.has_racks else ""
        lines.append(f"TOPIC {t} {meta.partitions} {racks}")
    for m in spec.members:
        owned = ",".join(f"{tp.topic}:{tp.partition}" for tp in m.owned)
        lines.append(f"MEMBER {m.member_id} {m.generation} {m.rack or ''} {','.join(m.topics)} {owned}")
    lines.append("END")
    return "\n".join(lines)


def _run_kafka(harness, blocks: list[str]) -> list:
    java, classes = harness
    res = subprocess.run([java, "-cp", str(classes), "org.apache.kafka.clients.consumer.StickyHarness"],
                         input="\n".join(blocks) + "\n", capture_output=True, text=True, timeout=600, check=True)
    outs, cur = [], {}
    for line in res.stdout.splitlines():
        if line == "DONE":
            outs.append(cur)
            cur = {}
        elif line.startswith("EXC"):
            cur = line
        else:
            _, mid, rest = line.split(" ", 2)
            cur[mid] = {(x.rsplit(":", 1)[0], int(x.rsplit(":", 1)[1])) for x in rest.split(",") if x}
    return outs


def _random_group(rng: random.Random) -> GroupSpec:
    """Small groups that hit every branch: racks, absent topics, conflicts, mixed generations."""
    racks = ["a", "b", "c", "d"][: rng.randint(1, 4)]
    use_racks = rng.random() < 0.4
    topics = {}
    for i in range(rng.randint(1, 6)):
        n = rng.choice([0, 1, 2, 3, 5, 8, 13, 20, 40])
        per: tuple = ()
        if use_racks and rng.random() < 0.8:
            rf, off = rng.randint(1, len(racks)), rng.randrange(len(racks))
            per = tuple(frozenset(racks[(p + j + off) % len(racks)] for j in range(rf)) for p in range(n))
        topics[f"t{i}"] = TopicMetadata(f"t{i}", n, per)
    names = list(topics) + ["ghost"]
    pool = [f"c{i}" for i in range(40)] + [f"consumer-{i}-x" for i in range(40)] + ["Aa", "BB", "AaAa", "BBBB", "AaBB"]
    ids = rng.sample(pool, rng.randint(1, 14))
    common = rng.sample(names, rng.randint(1, len(names)))
    uniform = rng.random() < 0.5
    all_tps = [TopicPartition(t, p) for t, meta in topics.items() for p in range(meta.partitions)]
    members = []
    for mid in ids:
        subs = common if uniform else rng.sample(names, rng.randint(1, len(names)))
        owned = tuple(rng.sample(all_tps, min(rng.choice([0, 0, 1, 3, 6, 12]), len(all_tps))))
        rack = rng.choice(racks) if use_racks and rng.random() < 0.8 else None
        members.append(MemberSubscription(mid, tuple(subs), owned, rng.choice([-1, 1, 2, 3, 3, 3]), rack))
    return GroupSpec(topics, tuple(members))


def _ours(spec: GroupSpec, name: str):
    try:
        out = ASSIGNORS[name]().assign(spec)
    except KafkaAssignorFailure:
        return "EXC NullPointerException"
    return {m: {(tp.topic, tp.partition) for tp in v} for m, v in out.items() if v}


def test_differential_against_kafka_classes(kafka_harness) -> None:
    specs = {(seed, name): _random_group(random.Random(seed)) for seed in range(150) for name in ASSIGNORS}
    compared = 0
    for _round in range(2):
        keys = list(specs)
        outs = _run_kafka(kafka_harness, [_block(specs[k], k[1]) for k in keys])
        assert len(outs) == len(keys)
        following = {}
        for key, theirs in zip(keys, outs):
            if not isinstance(theirs, str):
                theirs = {m: v for m, v in theirs.items() if v}
            assert _ours(specs[key], key[1]) == theirs, f"seed {key[0]} {key[1]} round {_round + 1}"
            compared += 1
            if not isinstance(theirs, str):
                result = {m.member_id: [TopicPartition(t, p) for t, p in sorted(theirs.get(m.member_id, ()))]
                          for m in specs[key].members}
                following[key] = next_round_spec(specs[key], result)
        specs = following
    assert compared >= 500
