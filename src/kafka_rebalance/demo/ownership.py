"""Who owned which partition when, and when members stopped: the report's ownership chart from an event log."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


def ownership_intervals(
    events: Iterable[dict[str, Any]], duration_ms: int
) -> tuple[list[dict], list[dict]]:
    """Who owned which partition when (from assigned/revoked/lost), and the members' protocol pauses."""
    open_: dict[tuple[str, str], int] = {}
    intervals: list[dict] = []
    stops: list[dict] = []
    for ev in events:
        kind, member, ts = ev["kind"], ev["member"], int(ev["ts_ms"])
        if kind == "assigned":
            for p in ev["partitions"]:
                open_.setdefault((member, p), ts)
        elif kind in ("revoked", "lost"):
            for p in ev["partitions"]:
                start = open_.pop((member, p), None)
                if start is not None:
                    intervals.append(
                        {"partition": p, "member": member, "start_ms": start, "end_ms": ts}
                    )
        elif kind == "paused":
            d = json.loads(ev["detail"] or "{}")
            if d.get("ms", 0) > 0 and "since_ms" in d:
                stops.append(
                    {
                        "start_ms": int(d["since_ms"]),
                        "end_ms": int(d["since_ms"]) + int(d["ms"]),
                        "member": member,
                    }
                )
    for (member, p), start in open_.items():
        intervals.append(
            {"partition": p, "member": member, "start_ms": start, "end_ms": duration_ms}
        )
    intervals.sort(key=lambda iv: (iv["partition"], iv["start_ms"]))
    return intervals, _merge(stops)


def _merge(stops: list[dict]) -> list[dict]:
    out: list[dict] = []
    for s in sorted(stops, key=lambda s: s["start_ms"]):
        if out and s["start_ms"] <= out[-1]["end_ms"]:
            out[-1]["end_ms"] = max(out[-1]["end_ms"], s["end_ms"])
        else:
            out.append({"start_ms": s["start_ms"], "end_ms": s["end_ms"]})
    return out
