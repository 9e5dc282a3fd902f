"""Every scenario of the fingerprint set gives the reference event log and summary, byte for byte.

A faster simulator (issue 20) must not change a single event; see tests/sim_fingerprint_set.py
for the set and how a deliberate behaviour change updates the reference values.
"""

from __future__ import annotations

import json

import pytest

from sim_fingerprint_set import FINGERPRINTS, fingerprint, scenarios

REFERENCE: dict[str, str] = json.loads(FINGERPRINTS.read_text())
SET = dict(scenarios())


def test_the_set_and_the_reference_name_the_same_scenarios() -> None:
    assert sorted(SET) == sorted(REFERENCE)


@pytest.mark.parametrize("name", sorted(SET))
def test_event_log_and_summary_are_the_reference_ones(name: str) -> None:
    assert fingerprint(SET[name]) == REFERENCE[name], (
        f"{name}: the event log or summary changed; a speed-up must not change them "
        "(see tests/sim_fingerprint_set.py)"
    )
