"""kafka-reassign-partitions.sh's lines from reassign_tool, on a stand-in admin (the real-broker
comparison with Kafka's tool is in test_reassign_live.py)."""

from __future__ import annotations

from kafka_rebalance.kafka.admin import OngoingReassignment
from kafka_rebalance.kafka.reassign_tool import (
    cancel,
    list_text,
    reassignment_json_text,
    replica_log_dirs,
    rollback_text,
    verify,
)


class Admin:
    def __init__(self, ongoing, current):
        self.ongoing, self.current, self.configs, self.cancelled = ongoing, current, [], []

    def list_partition_reassignments(self, partitions=None):
        keys = set(partitions) if partitions is not None else None
        return {k: v for k, v in self.ongoing.items() if keys is None or k in keys}

    def replica_assignment(self, topics=None):
        return {k: v for k, v in self.current.items() if topics is None or k[0] in topics}

    def describe_replica_log_dirs(self, replicas):
        return {r: ("/d1", None) for r in replicas}

    def live_brokers(self):
        return {1, 2, 3}

    def alter_configs(self, resources):
        self.configs.extend(resources)

    def alter_partition_reassignments(self, targets):
        self.cancelled.extend(targets)
        for k in targets:
            self.ongoing.pop(k, None)
        return {k: (0, None) for k in targets}


def test_list_lines() -> None:
    ongoing = {
        ("t", 10): OngoingReassignment((2, 3, 1), (3,), (1,)),
        ("t", 2): OngoingReassignment((1, 2, 4), (4,), ()),
    }
    assert list_text(ongoing) == (
        "Current partition reassignments:\n"
        "t-2: replicas: 1,2,4. adding: 4.\n"
        "t-10: replicas: 2,3,1. adding: 3. removing: 1."
    )
    assert list_text({}) == "No partition reassignments found."


def test_verify_lines_and_throttles_cleared_only_when_nothing_moves() -> None:
    target = {("t", 0): (2, 3), ("t", 1): (3, 1), ("u", 0): (1, 2)}
    admin = Admin(
        {("t", 0): OngoingReassignment((2, 3, 1), (3,), (1,))}, {("t", 1): (3, 1), ("u", 0): (2, 1)}
    )
    out: list[str] = []
    res = verify(admin, target, {}, False, out.append)
    assert out[0].splitlines() == [
        "Status of partition reassignment:",
        "Reassignment of partition t-0 is still in progress.",
        "Reassignment of partition t-1 is completed.",
        "There is no active reassignment of partition u-0, but replica set is 2,1 rather than 1,2.",
    ]
    assert not res["throttles_cleared"] and not admin.configs
    admin.ongoing.clear()
    admin.current[("t", 0)] = (2, 3)
    out.clear()
    moves = replica_log_dirs(target, {("t", 0): ("/d1", "any")})
    verify(admin, target, moves, False, out.append)
    assert "Reassignment of replica t-0-2 completed successfully." in out
    assert out[-2:] == [
        "Clearing broker-level throttles on brokers 1,2,3",
        "Clearing topic-level throttles on topics t,u",
    ]
    assert len(admin.configs) == 5  # 3 brokers, 2 topics


def test_cancel_follows_the_tools_rule_and_rollback_json_is_the_tools() -> None:
    target = {("t", 0): (2, 3), ("t", 1): (3, 1)}
    admin = Admin(
        {
            ("t", 0): OngoingReassignment((2, 3, 1), (3,), (1,)),
            ("t", 1): OngoingReassignment((2, 3, 1), (1,), ()),  # only adding: the tool leaves it
        },
        {},
    )
    out: list[str] = []
    cancel(admin, target, {}, True, 1000, out.append)
    assert out == [
        "Successfully cancelled partition reassignment for: t-0",
        "None of the specified partition moves are active.",
    ]
    assert admin.cancelled == [("t", 0)]
    assert reassignment_json_text({("t", 1): [1, 2], ("a", 0): [3]}) == (
        '{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[3],"log_dirs":["any"]},'
        '{"topic":"t","partition":1,"replicas":[1,2],"log_dirs":["any","any"]}]}'
    )
    assert rollback_text({("a", 0): [3]}).endswith(
        "\n\nSave this to use as the --reassignment-json-file option during rollback"
    )
