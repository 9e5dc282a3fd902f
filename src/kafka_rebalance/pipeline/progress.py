"""A progress line per Spark stage (tasks done of total, records read and written), on stderr.

Spark's own console bar is off (spark.ui.showConsoleProgress): this one is
drawn by rich from the driver's status store (the live one Spark keeps even
without its web UI), polled from a thread while a job runs.
"""

from __future__ import annotations

import threading
from typing import Any

from ..textfmt import count


class StageProgress:
    """Context manager: while open, one rich progress line per stage the session runs."""

    def __init__(self, spark, console, interval_s: float = 0.25) -> None:
        self.spark = spark
        self.console = console
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._tasks: dict[int, Any] = {}
        self._before: set[int] = set()

    def __enter__(self) -> StageProgress:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("tasks  {task.fields[records]}"),
            console=self.console,
            transient=False,
        )
        self._before = set(self.spark.sparkContext.statusTracker().getJobIdsForGroup())
        self.progress.start()
        self._thread = threading.Thread(target=self._poll, name="stage-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._update()
        self.progress.stop()

    def _poll(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self._update()
            except Exception:  # the session is going away: the last update happens in __exit__
                return

    def _update(self) -> None:
        """Every stage of the jobs started since __enter__ (finished ones too, so none is missed)."""
        tracker = self.spark.sparkContext.statusTracker()
        for jid in sorted(set(tracker.getJobIdsForGroup()) - self._before):
            job = tracker.getJobInfo(jid)
            for sid in sorted(job.stageIds) if job is not None else ():
                info = tracker.getStageInfo(sid)
                if info is None:
                    continue
                records = self._records(sid)
                if sid not in self._tasks:
                    name = info.name.split(" at ")[0]
                    self._tasks[sid] = self.progress.add_task(
                        f"stage {sid} {name}", total=info.numTasks, records=records
                    )
                self.progress.update(
                    self._tasks[sid], completed=info.numCompletedTasks, records=records
                )

    def _records(self, sid: int) -> str:
        """Records read (input and shuffle) and written so far by the stage's tasks, from the status store.

        `lastStageAttempt(id)` is the store's one-argument call: `stageData`'s
        defaulted Scala parameters grew in Spark 4 and py4j cannot leave them
        out. The store is live without the web UI; a stage not yet in it shows
        no figures.
        """
        try:
            d = self.spark.sparkContext._jsc.sc().statusStore().lastStageAttempt(sid)
            read = int(d.inputRecords()) + int(d.shuffleReadRecords())
            wrote = int(d.outputRecords()) + int(d.shuffleWriteRecords())
        except Exception:  # py4j: the stage is not in the store (yet), or the session is stopping
            return ""
        return records_text(read, wrote)


def records_text(read: int, wrote: int) -> str:
    return f"records read {count(read)}, written {count(wrote)}"
