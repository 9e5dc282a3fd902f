"""tpcache bounds the shared TopicPartition objects: no other cache may keep them past its start-over.

Review F8: uniform's `_topic_plan` (an lru_cache) kept each plan's partition
objects, so after tpcache started over up to 64 plans of old objects stayed
resident. The plan now holds names and counts only.
"""

from __future__ import annotations

import gc
import types

import pytest

from kafka_rebalance.assign import tpcache
from kafka_rebalance.assign import uniform as uniform_mod
from kafka_rebalance.model import GroupSpec, MemberSubscription, TopicMetadata, TopicPartition


def _spec(topic: str, partitions: int) -> GroupSpec:
    members = (
        MemberSubscription("a", (topic,), (TopicPartition(topic, 0),), 1),
        MemberSubscription("b", (topic,)),
        MemberSubscription("c", (topic,)),
    )
    return GroupSpec({topic: TopicMetadata(topic, partitions)}, members)


def _holders(obj: object) -> list[object]:
    """Containers (not stack frames) that still refer to `obj`."""
    gc.collect()
    return [r for r in gc.get_referrers(obj) if not isinstance(r, types.FrameType)]


@pytest.fixture
def small_tpcache(monkeypatch: pytest.MonkeyPatch):
    """A tpcache that starts over after 40 objects, empty before and after the test."""
    for cache in (tpcache._BY_TOPIC, tpcache._TABLES, tpcache._LISTS):
        cache.clear()
    tpcache._SIZE[0] = 0
    monkeypatch.setattr(tpcache, "MAX_CACHED", 40)
    uniform_mod._topic_plan.cache_clear()
    yield
    for cache in (tpcache._BY_TOPIC, tpcache._TABLES, tpcache._LISTS):
        cache.clear()
    tpcache._SIZE[0] = 0
    uniform_mod._topic_plan.cache_clear()


def test_uniform_plan_cache_keeps_no_objects_past_start_over(
    small_tpcache, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(uniform_mod, "USE_COMPILED", True)  # the path that uses _topic_plan
    spec = _spec("f8-a", 12)
    first = uniform_mod.UniformAssignor().assign(spec)
    assert uniform_mod._topic_plan.cache_info().currsize == 1
    old = tpcache._BY_TOPIC["f8-a"]
    old_ids = set(map(id, old))  # no closure over `old`: a cell would be one more holder
    assert any(id(tp) in old_ids for tps in first.values() for tp in tps)

    tpcache.topic_objects("f8-big", 35)  # 12 + 35 > 40: tpcache starts over
    assert "f8-a" not in tpcache._BY_TOPIC
    del first
    assert _holders(old) == [], "a cache still holds the objects tpcache let go"

    # the plan is still a hit, and the result is built from tpcache's new objects (plus the
    # partition member a owns, which the assignor keeps as given)
    again = uniform_mod.UniformAssignor().assign(spec)
    assert uniform_mod._topic_plan.cache_info().hits >= 1
    new = tpcache._BY_TOPIC["f8-a"]
    assert new is not old
    new_ids = set(map(id, new)) | {id(spec.members[0].owned[0])}
    assert all(id(tp) in new_ids for tps in again.values() for tp in tps)
    assert not any(id(tp) in old_ids for tps in again.values() for tp in tps)
    monkeypatch.setattr(uniform_mod, "USE_COMPILED", False)
    assert uniform_mod.UniformAssignor().assign(spec) == again
