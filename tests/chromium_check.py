"""Open a report page in Debian's headless Chromium and read what its render-status element says."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]


def render_status(page: Path, profile: Path, budget_ms: int = 20000) -> dict:
    """done / expected / rendered / errors, as the page's own script recorded them after loading."""
    dom = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=180).stdout
    status = re.search(r'<div id="render-status"([^>]*)>', dom)
    assert status, "render status element missing"
    attrs = dict(re.findall(r'data-(\w+)="([^"]*)"', status.group(1)))
    return {"done": attrs.get("done") == "true", "expected": int(attrs.get("expected", -1)),
            "rendered": int(attrs.get("rendered", -2)),
            "errors": json.loads(attrs.get("errors", "[]").replace("&quot;", '"'))}


def screenshot(page: Path, profile: Path, target: Path, height: int = 2400) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=20000",
                    f"--window-size=1400,{height}", f"--screenshot={target}", page.as_uri()],
                   capture_output=True, timeout=180)
    return target
