"""Open a report page in Debian's headless Chromium and read what its render-status element says."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


# no network at all: a self-contained page needs none
OFFLINE = ["--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0"]


def render_status(page: Path, profile: Path, budget_ms: int = 20000) -> dict:
    """done / expected / rendered / errors, as the page's own script recorded them, plus console errors."""
    run = subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            *OFFLINE,
            f"--user-data-dir={profile}",
            f"--virtual-time-budget={budget_ms}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    dom = run.stdout
    console = [
        line
        for line in run.stderr.splitlines()
        if "Uncaught" in line or "CONSOLE" in line and "rror" in line
    ]
    status = re.search(r'<div id="render-status"([^>]*)>', dom)
    assert status, "render status element missing"
    attrs = dict(re.findall(r'data-(\w+)="([^"]*)"', status.group(1)))
    return {
        "done": attrs.get("done") == "true",
        "expected": int(attrs.get("expected", -1)),
        "rendered": int(attrs.get("rendered", -2)),
        "errors": json.loads(attrs.get("errors", "[]").replace("&quot;", '"')) + console,
    }


def external_references(page: Path) -> list[str]:
    """Every src/href of the page's own markup that would reach the network (script bodies aside)."""
    markup = re.sub(
        r"<script[^>]*>.*?</script>",
        "<script></script>",
        page.read_text(encoding="utf-8"),
        flags=re.S,
    )
    return re.findall(r'(?:src|href)\s*=\s*["\']((?:https?:)?//[^"\']+)', markup)


def screenshot(page: Path, profile: Path, target: Path, height: int = 2400) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={profile}",
            "--virtual-time-budget=20000",
            f"--window-size=1400,{height}",
            f"--screenshot={target}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=180,
    )
    return target
