"""io_util: atomic writes get the umask's mode, and reading the umask never changes it."""

from __future__ import annotations

import os
import stat
import sys

import pytest

from kafka_rebalance import io_util


@pytest.fixture
def umask_027():
    old = os.umask(0o027)
    try:
        yield 0o027
    finally:
        os.umask(old)


@pytest.fixture
def umask_calls(monkeypatch):
    """Every os.umask call made through the module, so a test can assert the mask never changed."""
    calls: list[int] = []
    real = os.umask

    def spy(mask: int) -> int:
        calls.append(mask)
        return real(mask)

    monkeypatch.setattr(io_util.os, "umask", spy)
    return calls


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/status is Linux's")
def test_the_umask_is_read_without_setting_it(umask_027, umask_calls):
    # another thread creating a file while the mask is temporarily changed would get the wrong mode
    assert io_util._umask() == umask_027
    assert umask_calls == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/status is Linux's")
def test_a_later_umask_change_is_seen(umask_027):
    assert io_util._umask() == 0o027
    os.umask(0o002)
    assert io_util._umask() == 0o002  # nothing cached


def test_without_proc_the_mask_is_restored_and_never_opened_up(
    umask_027, umask_calls, monkeypatch, tmp_path
):
    monkeypatch.setattr(io_util, "_PROC_STATUS", str(tmp_path / "missing"))
    assert io_util._umask() == umask_027
    assert umask_calls == [
        0o777,
        umask_027,
    ]  # the window is private, never 0 (world-writable files)
    assert os.umask(umask_027) == umask_027


def test_atomic_write_gets_the_umask_mode_not_mkstemps(umask_027, tmp_path):
    target = tmp_path / "sub" / "out.json"
    io_util.atomic_write_json(target, {"a": 1})
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert io_util.read_structured(target) == {"a": 1}
    assert [p.name for p in target.parent.iterdir()] == ["out.json"]  # no temporary left behind
