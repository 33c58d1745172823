"""The local pool behind the executor interface (egtb/executor.py), with real forked processes.

The Dask half runs the same interface in tests/test_distributed.py.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest

from egtb.errors import TaskError
from egtb.executor import LocalPool, Task


def spans(path: str, name: str, *, after=()) -> tuple[str, int, float, float]:
    """A task that records when it ran (monotonic clock, the same in every process)."""
    start = time.monotonic()
    time.sleep(0.2)  # long enough to overlap with a task started beside it
    return name, os.getpid(), start, time.monotonic()


def add(a: int, b: int, *, after=()) -> int:
    return a + b + sum(after)


def fail(message: str) -> None:
    raise OSError(message)


def wait_forever(pid_file: str) -> None:
    Path(pid_file).write_text(str(os.getpid()))
    while True:
        time.sleep(1)


def warn(text: str) -> int:
    logging.getLogger("egtb.test_executor").warning(text)
    return os.getpid()


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_task_gets_the_results_of_the_tasks_it_waits_for(jobs):
    tasks = [Task("sum", add, (1, 2), after=("a", "b")), Task("a", add, (10, 0)), Task("b", add, (20, 0))]
    results = {done.task.key: done.result for done in LocalPool(jobs).run(tasks)}
    assert results == {"a": 10, "b": 20, "sum": 33}


def test_one_job_runs_ready_tasks_highest_priority_first_in_this_process():
    tasks = [Task(name, add, (0, 0), priority=p) for name, p in (("low", 1), ("high", 9), ("mid", 5))]
    done = list(LocalPool(1).run(tasks))
    assert [d.task.key for d in done] == ["high", "mid", "low"]
    assert {d.pid for d in done} == {os.getpid()}


def test_tasks_whose_costs_exceed_the_limit_together_never_overlap(tmp_path):
    big = [Task(f"big{i}", spans, (str(tmp_path), f"big{i}"), costs={"memory": 6}) for i in range(2)]
    small = [Task(f"small{i}", spans, (str(tmp_path), f"small{i}"), costs={"memory": 1}) for i in range(2)]
    done = [d.result for d in LocalPool(2).run(big + small, limits={"memory": 8})]
    by_name = {name: (start, end) for name, _, start, end in done}
    (a0, a1), (b0, b1) = by_name["big0"], by_name["big1"]
    assert a1 <= b0 or b1 <= a0  # 6 + 6 > 8: one after the other
    assert len({pid for _, pid, _, _ in done} - {os.getpid()}) == 2  # both workers ran tasks



def test_what_a_task_holds_stays_taken_until_the_task_that_releases_it_ends(tmp_path):
    # a split pair: its first task makes the scratch files, its last removes them; another
    # pair's scratch that does not fit beside them waits for that last task, not for the first
    where = str(tmp_path)
    first = Task("make", spans, (where, "make"), holds={"disk": 6}, held_until="remove")
    middle = [Task(f"solve{i}", spans, (where, f"solve{i}"), after=("make",)) for i in range(2)]
    last = Task("remove", spans, (where, "remove"), after=("solve0", "solve1"))
    other = Task("other", spans, (where, "other"), costs={"disk": 3}, priority=-1)
    done = {d.task.key: d.result for d in LocalPool(2).run([first, *middle, last, other], limits={"disk": 8})}
    spans_of = {name: (start, end) for name, _, start, end in done.values()}
    assert spans_of["other"][0] >= spans_of["remove"][1]  # 6 + 3 > 8: after the hold ends
    s0, s1 = spans_of["solve0"], spans_of["solve1"]
    assert s0[0] < s1[1] and s1[0] < s0[1]  # the held disk does not keep the pair's own tasks apart
    small = Task("small", spans, (where, "small"), costs={"disk": 2}, priority=-1)
    done = {d.task.key: d.result for d in LocalPool(2).run([first, *middle, last, small], limits={"disk": 8})}
    assert done["small"][2] < done["remove"][2]  # 6 + 2 fits: it runs beside the pair

def test_a_failing_task_raises_a_task_error_naming_it(tmp_path):
    tasks = [Task("fine", add, (1, 1)), Task("broken", fail, ("disk full",))]
    with pytest.raises(TaskError, match="task broken failed: OSError: disk full") as caught:
        list(LocalPool(2).run(tasks))
    assert caught.value.key == "broken" and isinstance(caught.value.__cause__, OSError)


def test_a_run_closed_early_kills_the_workers(tmp_path):
    pid_file = tmp_path / "pid"
    run = LocalPool(2).run([Task("quick", add, (1, 1)), Task("stuck", wait_forever, (str(pid_file),))])
    assert next(run).task.key == "quick"
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the stuck task never started"
        time.sleep(0.05)
    run.close()
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(int(pid_file.read_text()), 0)


def test_tasks_are_taken_from_the_stream_as_the_window_allows():
    taken = []

    def stream():
        for i in range(5):
            taken.append(i)
            yield Task(f"t{i}", add, (i, 0))

    run = LocalPool(1).run(stream(), window=1)
    first = next(run)
    assert first.result == 0 and taken == [0]  # the rest is not taken yet
    assert [d.result for d in run] == [1, 2, 3, 4]


def test_the_workers_log_records_reach_this_process(caplog):
    logger = logging.getLogger("egtb.test_executor")
    with caplog.at_level(logging.WARNING, logger="egtb.test_executor"):
        handler = caplog.handler
        logger.addHandler(handler)  # the records come back to the logger's own handlers
        try:
            pids = {d.result for d in LocalPool(2).run([Task(f"w{i}", warn, (f"from task {i}",))
                                                        for i in range(3)], logger="egtb.test_executor")}
        finally:
            logger.removeHandler(handler)
    assert os.getpid() not in pids
    assert sorted(r.getMessage() for r in caplog.records if r.name == "egtb.test_executor") == \
        ["from task 0", "from task 1", "from task 2"]


def test_tasks_waiting_for_a_task_not_in_the_run_are_refused():
    with pytest.raises(ValueError, match="not in the run"):
        list(LocalPool(1).run([Task("orphan", add, (1, 1), after=("ghost",))]))
