"""What the hostile-input tests of the CLI check (tests/test_hostile_outputs.py,
tests/test_hostile_state_file.py): the folder's tree before and after (`tree`), an error of one line
naming what it must (`one_line_error`), and the state file `cluster execute --execute` writes first
for the example plan (`fresh_state`)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = ROOT / "examples" / "cluster.json"


def tree(d: Path) -> dict[str, bytes | None]:
    """Every path under `d` with its content (None for a folder): what 'unchanged' compares."""
    return {
        str(p.relative_to(d)): (None if p.is_dir() else p.read_bytes())
        for p in sorted(d.rglob("*"))
    }


def one_line_error(rc: int, want_rc: int, err: str, *says: str) -> None:
    lines = err.strip().splitlines()
    assert rc == want_rc, err
    assert len(lines) == 1 and "Traceback" not in err, err
    for s in says:
        assert s in lines[0], (s, lines[0])


def fresh_state(plan_file: Path) -> dict:
    """The state file `cluster execute --execute` writes first, for the example plan."""
    from kafka_rebalance.cluster.batches import parse_reassignment
    from kafka_rebalance.io_util import read_structured
    from kafka_rebalance.kafka.execute import plan_digest, plan_execution, state_from_plan
    from kafka_rebalance.ops.cluster_source import read_snapshot

    doc = read_structured(plan_file)
    plan = plan_execution(
        parse_reassignment(doc),
        read_snapshot(str(SNAPSHOT), None, None),
        throttle=1_000_000,
        max_moves_per_broker=1,
        max_moves=None,
        digest=plan_digest(doc),
    )
    return state_from_plan(plan, "127.0.0.1:1")
