"""Benchmark the play page (`tournament play`) on loopback: probe API, engine moves, page load.

Prints figures, never asserts. Starts the real command (`tournament play --no-browser
--port 0`) on the tables of ``--tables`` (default data/egtb); when that directory is
not complete up to 5 pieces, builds it first (niced, 2 jobs, about 25 s on an idle
machine) and says so.

    .venv/bin/python bench/bench_web.py --tables data/egtb

Targets (issue 12): probe API round trip under 20 ms median on a 5-piece position
with all its moves; engine move at "easy" under 200 ms; page load under 1 s on
loopback. Each figure is printed next to baselines measured in the same run: the
same work called in-process, and the round trip of a request that does almost
nothing (on a loaded machine that floor is the wait for a CPU, not our code).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from egtb.probe.results import answer
from egtb.probe.tablebase import Tablebase
from egtb.rules.board import Board

PIECES = 5
#: A 5-piece position with many legal moves (kings of both sides).
PROBE_FEN = "W:WK14,K19,K22:BK4,K29"
PROBE_TARGET_MS = 20.0
ENGINE_TARGET_MS = 200.0
PAGE_TARGET_MS = 1000.0
#: Games whose next move the easy engine is asked for.
ENGINE_GAMES = [[], ["11-15"], ["11-15", "23-19", "8-11", "22-17"], ["9-13", "21-17", "5-9", "25-21"]]
STATIC_FILES = ["/", "/static/app.js", "/static/board.js", "/static/style.css", "/static/favicon.svg"]
FIRST_CALLS = ["/api/info", "/api/ballots", "/api/moves?" + urlencode({"fen": Board().fen()})]


def ensure_tables(directory: Path) -> str:
    """Build the tables up to PIECES when the directory lacks some; say what was done."""
    if Tablebase(directory).max_pieces >= PIECES:
        return f"reusing {directory} (complete up to {Tablebase(directory).max_pieces} pieces)"
    started = time.perf_counter()
    subprocess.run(["nice", "-n", "10", sys.executable, "-m", "egtb.cli", "build", "--pieces", str(PIECES),
                    "--tables", str(directory), "--jobs", "2", "--quiet"], check=True)
    return f"built {directory} up to {PIECES} pieces in {time.perf_counter() - started:.0f} s"


def start_server(directory: Path) -> tuple[subprocess.Popen, str]:
    """`tournament play` on any free port; its process and URL."""
    process = subprocess.Popen([sys.executable, "-m", "tournament.cli", "play", "--no-browser", "--port", "0",
                                "--tables", str(directory)], stdout=subprocess.PIPE, text=True)
    for line in process.stdout:
        if line.startswith("serving on "):
            return process, line.split()[2]
    raise RuntimeError("tournament play did not start")


def median_ms(samples: list[float]) -> float:
    return 1000 * statistics.median(samples)


def p90_ms(samples: list[float]) -> float:
    return 1000 * sorted(samples)[int(0.9 * (len(samples) - 1))]


class Client:
    """One keep-alive HTTP connection, as a browser keeps one."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)

    def get(self, path: str) -> bytes:
        self.connection.request("GET", path)
        response = self.connection.getresponse()
        body = response.read()
        if response.status >= 500:
            raise RuntimeError(f"GET {path}: {response.status} {body[:200]!r}")
        return body

    def post(self, path: str, data: dict) -> dict:
        self.connection.request("POST", path, body=json.dumps(data), headers={"Content-Type": "application/json"})
        response = self.connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"POST {path}: {response.status} {body[:200]!r}")
        return json.loads(body)


def timed(call, repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples


def bench_probe(client: Client, directory: Path, repeats: int) -> None:
    path = "/api/probe?" + urlencode({"fen": PROBE_FEN})
    record = json.loads(client.get(path))  # loads the tables it needs
    http_samples, floor = [], []
    for _ in range(repeats):  # interleaved, so that a burst of load on the machine hits both alike
        http_samples += timed(lambda: client.get(path), 1)
        floor += timed(lambda: client.get("/api/info"), 1)  # the same trip with (almost) no work
    with Tablebase(directory) as tb:
        answer(tb, PROBE_FEN)
        local = timed(lambda: answer(tb, PROBE_FEN), repeats)
    print(f"probe API, {PROBE_FEN} ({len(record['moves'])} moves, {record['value']} dtw {record['dtw']}):")
    print(f"  round trip median {median_ms(http_samples):.2f} ms, p90 {p90_ms(http_samples):.2f} ms "
          f"(target < {PROBE_TARGET_MS:.0f} ms); in-process answer() {median_ms(local):.2f} ms, "
          f"ratio {statistics.median(http_samples) / statistics.median(local):.1f}x; "
          f"HTTP floor (GET /api/info) {median_ms(floor):.2f} ms")


def bench_engine(client: Client, repeats: int) -> None:
    from tournament.engines.base import GameState, Limit
    from tournament.engines.registry import make_engine

    client.post("/api/engine-move", {"strength": "easy"})  # waits for the worker to load the engines
    samples = []
    for _ in range(repeats):
        for history in ENGINE_GAMES:
            samples += timed(lambda: client.post("/api/engine-move", {"history": history, "strength": "easy"}), 1)
    engine = make_engine("easy")
    local = []
    for _ in range(repeats):
        for history in ENGINE_GAMES:
            local += timed(lambda: engine.play(GameState(Board().fen(), tuple(history)), Limit(time=1.0)), 1)
    print(f"engine move at easy ({len(samples)} moves from {len(ENGINE_GAMES)} positions):")
    print(f"  round trip median {median_ms(samples):.2f} ms, p90 {p90_ms(samples):.2f} ms "
          f"(target < {ENGINE_TARGET_MS:.0f} ms); in-process play() {median_ms(local):.2f} ms")


def bench_page_http(url: str, repeats: int) -> None:
    def load() -> None:
        client = Client(url)
        for path in STATIC_FILES + FIRST_CALLS:
            client.get(path)
        client.connection.close()

    samples = timed(load, repeats)
    print(f"page over HTTP (page, script, style, icon and the {len(FIRST_CALLS)} first API calls, one connection):")
    print(f"  median {median_ms(samples):.1f} ms, p90 {p90_ms(samples):.1f} ms")


def bench_page_browser(url: str, repeats: int) -> None:
    """Navigation to a drawn board in headless Chromium, when Debian's chromium is installed."""
    chromium, driver_path = "/usr/bin/chromium", "/usr/bin/chromedriver"
    if not (Path(chromium).exists() and Path(driver_path).exists()):
        print("page in a browser: skipped (apt-get install chromium chromium-driver)")
        return
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    ready = "return document.getElementById('status').textContent.length > 0 && !!document.getElementById('sq-1')"
    try:
        loads, ready_times = [], []
        for i in range(repeats + 1):
            started = time.perf_counter()
            driver.get(f"{url}?view=play&opponent=hotseat&n={i}")
            loaded = time.perf_counter()
            while not driver.execute_script(ready):
                time.sleep(0.005)
            done = time.perf_counter()
            if i:  # the first load warms the browser's process
                loads.append(loaded - started)
                ready_times.append(done - started)
    finally:
        driver.quit()
    print(f"page in headless Chromium ({repeats} loads):")
    print(f"  load event median {median_ms(loads):.0f} ms; board drawn and playable median "
          f"{median_ms(ready_times):.0f} ms, p90 {p90_ms(ready_times):.0f} ms (target < {PAGE_TARGET_MS:.0f} ms)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=Path, default=Path(os.environ.get("EGTB_DIR", "data/egtb")))
    parser.add_argument("--repeats", type=int, default=200, help="probe round trips (engine and page: fewer)")
    args = parser.parse_args()
    print(ensure_tables(args.tables))
    process, url = start_server(args.tables)
    try:
        client = Client(url)
        bench_probe(client, args.tables, args.repeats)
        bench_engine(client, max(1, args.repeats // 20))
        bench_page_http(url, max(5, args.repeats // 10))
        bench_page_browser(url, max(3, args.repeats // 40))
    finally:
        process.terminate()
        process.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
