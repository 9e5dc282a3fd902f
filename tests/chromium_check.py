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


def render_status(
    page: Path, profile: Path, budget_ms: int = 20000, width: int | None = None
) -> dict:
    """done / expected / rendered / errors, as the page's own script recorded them, plus console errors."""
    run = subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            *OFFLINE,
            f"--user-data-dir={profile}",
            f"--virtual-time-budget={budget_ms}",
            *([f"--window-size={width},900"] if width else []),
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
        "scroll_width": int(attrs.get("scrollwidth", "-1")),
        "inner_width": int(attrs.get("innerwidth", "-1")),
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


def screenshot(
    page: Path, profile: Path, target: Path, height: int = 2400, width: int = 1400
) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={profile}",
            "--virtual-time-budget=20000",
            f"--window-size={width},{height}",
            f"--screenshot={target}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=180,
    )
    return target


def _frame_page(page: Path, folder: Path, width: int, height: int) -> Path:
    """A page holding `page` in an iframe `width` CSS pixels wide: headless Chromium's windows are
    never narrower than 500 px, an iframe is. The outer page copies what the report measured of
    itself (its render status) once it is done."""
    folder.mkdir(parents=True, exist_ok=True)
    wrapper = folder / f"frame-{width}.html"
    wrapper.write_text(
        f"""<!DOCTYPE html><html><body style="margin:0">
<iframe id="f" src="{page.as_uri()}" style="width:{width}px;height:{height}px;border:0"></iframe>
<div id="measured"></div>
<script>
function probe() {{
  var out = document.getElementById('measured');
  try {{
    var d = document.getElementById('f').contentDocument;
    var s = d && d.getElementById('render-status');
    if (!s || s.getAttribute('data-done') !== 'true') {{ setTimeout(probe, 100); return; }}
    out.setAttribute('data-scrollwidth', String(d.scrollingElement.scrollWidth));
    out.setAttribute('data-innerwidth', String(d.defaultView.innerWidth));
    out.setAttribute('data-clientwidth', String(d.scrollingElement.clientWidth));
    out.setAttribute('data-rendered', s.getAttribute('data-rendered'));
    out.setAttribute('data-expected', s.getAttribute('data-expected'));
  }} catch (e) {{ out.setAttribute('data-error', String(e)); }}
}}
setTimeout(probe, 100);
</script></body></html>""",
        encoding="utf-8",
    )
    return wrapper


def page_width_at(page: Path, profile: Path, width: int) -> dict:
    """How wide the report's content is when its viewport is `width` CSS pixels."""
    wrapper = _frame_page(page, profile / "frames", width, 1200)
    run = subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            *OFFLINE,
            "--disable-web-security",  # the outer page reads the framed page (both local files)
            f"--user-data-dir={profile}",
            "--virtual-time-budget=20000",
            f"--window-size={max(width + 40, 600)},1300",
            "--dump-dom",
            wrapper.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    m = re.search(r'<div id="measured"([^>]*)>', run.stdout)
    assert m, "measurement element missing"
    attrs = dict(re.findall(r'data-(\w+)="([^"]*)"', m.group(1)))
    assert "error" not in attrs, attrs["error"]
    return {k: int(v) for k, v in attrs.items()}


def screenshot_at(page: Path, profile: Path, target: Path, width: int, height: int = 4000) -> Path:
    """A screenshot of the page in a viewport `width` CSS pixels wide (framed, see _frame_page)."""
    wrapper = _frame_page(page, profile / "frames", width, height)
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            *OFFLINE,
            "--disable-web-security",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=20000",
            f"--window-size={max(width, 500)},{height}",
            f"--screenshot={target}",
            wrapper.as_uri(),
        ],
        capture_output=True,
        timeout=180,
    )
    return target
