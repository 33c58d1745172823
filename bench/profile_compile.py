"""Where a cold kernel compile's time goes: the test suite's warm-up (tests/numba_warmup.py) run
with an empty numba cache, every compile numba makes timed in CPU seconds (prints a table).

Run: ``.venv/bin/python bench/profile_compile.py [--top N] [--signatures]``

The warm-up's parts run in this process one after the other, with ``NUMBA_CACHE_DIR`` an empty
temporary directory, so every ``cache=True`` kernel they reach is compiled from scratch, once (the
test run has them side by side with one cache: a kernel both reach at once may compile twice). A listener on numba's ``numba:compile`` event takes
the process's CPU time at each compile's start and end; a compile that starts inside another's
(a callee typed by its caller) is subtracted from its caller's, so each row's *self* time is the
compile's own (typing, lowering, the LLVM passes over what it inlined), *total* with its callees.
One row per function and argument types (``--signatures``), or per function, the signatures
counted: a function compiled for several signatures is one to look at (int32 against int64
arguments, C against A layouts, readonly against writable arrays).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Compile:
    """One compile numba made: its function, signature and CPU seconds."""

    name: str
    """The function's module and qualified name."""
    signature: str
    """Its argument types, as numba prints them."""
    total: float = 0.0
    """CPU seconds from its start to its end, its callees' compiles included."""
    callees: float = 0.0
    """CPU seconds of the compiles that started inside it."""

    @property
    def own(self) -> float:
        """CPU seconds of this compile without its callees'."""
        return self.total - self.callees


@dataclass
class CompileRecorder:
    """A ``numba:compile`` listener that times every compile in process CPU seconds."""

    done: list[Compile] = field(default_factory=list)
    """The finished compiles, in the order they ended."""
    _open: list[tuple[Compile, float]] = field(default_factory=list)

    def on_start(self, data: dict) -> None:
        """A compile began: put it on the stack of open compiles."""
        function = data["dispatcher"].py_func
        name = f"{function.__module__}.{function.__qualname__}"
        self._open.append((Compile(name, str(tuple(data["args"]))), time.process_time()))

    def on_end(self) -> None:
        """The innermost open compile ended: time it and charge it to its caller's callees."""
        compile_, start = self._open.pop()
        compile_.total = time.process_time() - start
        if self._open:
            self._open[-1][0].callees += compile_.total
        self.done.append(compile_)


def install(recorder: CompileRecorder) -> None:
    """Register ``recorder`` with numba's event system for the ``numba:compile`` events."""
    from numba.core import event

    class Listener(event.Listener):
        def on_start(self, ev):
            recorder.on_start(ev.data)

        def on_end(self, ev):
            recorder.on_end()

    event.register("numba:compile", Listener())


def summarise(done: list[Compile], by_signature: bool) -> list[tuple[str, int, float, float]]:
    """Rows (name, compiles, own CPU s, total CPU s), the largest own time first."""
    rows: dict[str, list] = defaultdict(lambda: [0, 0.0, 0.0])
    for compile_ in done:
        key = f"{compile_.name} {compile_.signature}" if by_signature else compile_.name
        row = rows[key]
        row[0] += 1
        row[1] += compile_.own
        row[2] += compile_.total
    return sorted(((key, *row) for key, row in rows.items()), key=lambda row: -row[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=30, help="rows to print (default 30)")
    parser.add_argument("--signatures", action="store_true", help="a row per signature, not per function")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="numba-cold-") as cache:
        os.environ["NUMBA_CACHE_DIR"] = cache
        sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
        recorder = CompileRecorder()
        install(recorder)
        import numba_warmup

        start = time.process_time()
        for part in numba_warmup.PARTS:
            numba_warmup.main(part)
        elapsed = time.process_time() - start
    compiled = sum(compile_.own for compile_ in recorder.done)
    print(f"warm-up: {elapsed:.1f} CPU s in this process, {compiled:.1f} of them in {len(recorder.done)} "
          f"compiles (child processes not counted)")
    print(f"{'own s':>7} {'total s':>7} {'n':>3}  function")
    for key, count, own, total in summarise(recorder.done, args.signatures)[:args.top]:
        print(f"{own:7.2f} {total:7.2f} {count:3d}  {key}")


if __name__ == "__main__":
    main()
