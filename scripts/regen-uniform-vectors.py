"""Regenerate the `uniform` expectations of the parity vectors whose subscription type depends on a
topic missing from metadata, from Kafka's own UniformAssignor under Kafka's rule.

Kafka's coordinator calls a group homogeneous when every subscribed topic *name* has every member
(ModernGroup.subscriptionType, 1eb7644349cb), a topic absent from metadata included. The vectors
were first made counting only topics in metadata; where the two rules disagree (a member subscribes
to a missing topic the others do not) the builder differs. This script finds those vectors and runs
Kafka's assignor (../shared/java-assignors, its default `-Dbench.subscriptionType=names`) for every
round, feeding round k+1 from Java's round k as the vectors' README says, and rewrites
`expected.uniform` in place.

    .venv/bin/python scripts/regen-uniform-vectors.py [--check]   # --check: report, write nothing
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HARNESS = Path(os.environ.get("JAVA_ASSIGNORS", ROOT.parent / "shared" / "java-assignors"))
VECTORS = [ROOT / "tests" / "vectors" / "assignors", ROOT / "tests" / "vectors" / "assignors-large"]


def rules_disagree(doc: dict) -> bool:
    present = {t["name"] for t in doc["topics"]}
    by_ids = {frozenset(t for t in m["topics"] if t in present) for m in doc["members"]}
    by_names = {frozenset(m["topics"]) for m in doc["members"]}
    return (len(by_ids) <= 1) != (len(by_names) <= 1)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--check", action="store_true", help="only report which vectors would change")
    args = ap.parse_args()
    if not (HARNESS / "side_by_side.py").exists():
        print(
            f"error: Kafka's assignor harness not found at {HARNESS} (set JAVA_ASSIGNORS)",
            file=sys.stderr,
        )
        return 2
    os.environ.setdefault("KAFKA_REBALANCE_ROOT", str(ROOT))
    sys.path.insert(0, str(HARNESS))
    sys.path.insert(0, str(ROOT / "src"))
    import side_by_side as sbs  # the harness's own loaders and its Java line protocol

    from kafka_rebalance.model import parse_group_scenario

    sbs.CLASSES = sbs.ensure_build(sbs.default_build_dir().expanduser().resolve())
    work = Path(tempfile.mkdtemp(prefix="regen-uniform-"))
    java = sbs.Java(shlex.split("-Dbench.subscriptionType=names"), work / "java.stderr")
    changed = 0
    try:
        for d in VECTORS:
            for f in sorted(d.glob("*.json")):
                doc = json.loads(f.read_text(encoding="utf-8"))
                if "uniform" not in doc.get("expected", {}) or not rules_disagree(doc):
                    continue
                spec = parse_group_scenario(doc).spec
                layouts = {
                    t["name"]: {
                        "rf": t.get("rf", len(t["racks"])),
                        "racks": t["racks"],
                        "offset": t.get("offset", 0),
                    }
                    for t in doc["topics"]
                    if "racks" in t
                }
                rounds = []
                for _ in doc["expected"]["uniform"]:
                    sbs.write_input(spec, work / "in.txt", layouts)
                    java.ask(f"load uniform {work / 'in.txt'}")
                    java.run()
                    java.ask(f"dump {work / 'out.txt'}")
                    got = sbs.read_dump(work / "out.txt")
                    rounds.append(
                        {
                            m.member_id: [
                                [tp.topic, tp.partition] for tp in got.get(m.member_id, [])
                            ]
                            for m in spec.members
                        }
                    )
                    gen = max(0, max((m.generation for m in spec.members), default=0)) + 1
                    spec = sbs.with_owned(spec, got, gen)
                same = rounds == doc["expected"]["uniform"]
                print(
                    f"{f.relative_to(ROOT)}: {'unchanged' if same else 'regenerated'} ({len(rounds)} rounds)"
                )
                if not same and not args.check:
                    doc["expected"]["uniform"] = rounds
                    tmp = f.with_suffix(".json.tmp")
                    tmp.write_text(
                        json.dumps(doc, ensure_ascii=False, separators=(",", ":")), encoding="utf-8"
                    )
                    tmp.replace(f)
                changed += not same
    finally:
        java.close()
    print(f"{changed} vector(s) {'would change' if args.check else 'changed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
