"""Builds and tournaments on a real Dask cluster: one scheduler and two worker processes.

The cluster is started from the command line (``dask scheduler``, ``dask worker``) as
separate OS processes, bounded in time, and torn down afterwards, also on failure.
Every result is compared with the same work done by the local pool.

The default run keeps the executor, the tournaments, a failing and a 3-piece build on a real
scheduler and worker that run in the test's process (``LocalCluster(processes=False)``, TCP on
127.0.0.1): the same client, tasks and results, without starting five Python processes that
load Dask and egtb. The ``slow`` checks (CI) run those tests again on the worker processes, and
everything that needs them: the kills of a worker (during a build, a split pair, a tournament,
and after a result), the 4-piece builds and the split 5-piece pair.
"""

from __future__ import annotations

import json
import operator
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed", reason="Dask is not installed: pip install .[distributed]")

from egtb.cli import main as egtb_main  # noqa: E402
from egtb.dask.cluster import WORKER_ENVIRONMENT, ClusterError, ClusterSpec, connect  # noqa: E402
from egtb.errors import SolverError  # noqa: E402
from egtb.builder import driver as builder, pipeline, plan as planner  # noqa: E402
from egtb.formats import master  # noqa: E402
from egtb.formats.compact.layout import compact_paths  # noqa: E402
from egtb.formats.compact.sidecar import marks_path  # noqa: E402
from egtb.dask.executor import DaskPool  # noqa: E402
from egtb.executor import LocalPool, Task  # noqa: E402
from egtb.positions.material import all_materials  # noqa: E402
from tournament.records import pair_counts  # noqa: E402
from tournament.config import SprtSettings, TournamentConfig  # noqa: E402
from tournament.run_directory import load_records  # noqa: E402
from tournament.schedule import run_tournament  # noqa: E402

#: Seconds any one step may take before the test fails (the cluster is torn down anyway).
STEP_SECONDS = 240
START_SECONDS = 90
MEMORY_LIMIT = "3GB"
GAMES = 200


class Cluster:
    """A scheduler and two workers started as OS processes, and a client on them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.scheduler_file = root / "scheduler.json"
        self.processes: list[subprocess.Popen] = []
        self.client = None

    def start(self) -> None:
        self._spawn("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                    "--scheduler-file", str(self.scheduler_file))
        deadline = time.monotonic() + START_SECONDS
        while not self.scheduler_file.exists():
            self._check_alive()
            if time.monotonic() > deadline:
                raise TimeoutError("dask scheduler did not write its scheduler file")
            time.sleep(0.2)
        for n in range(2):
            self._spawn("worker", "--scheduler-file", str(self.scheduler_file), "--nthreads", "1",
                        "--memory-limit", MEMORY_LIMIT, "--no-dashboard", "--death-timeout", "60",
                        "--host", "127.0.0.1", "--name", f"w{n}", "--local-directory", str(self.root / f"w{n}"))
        self.client = distributed.Client(scheduler_file=str(self.scheduler_file), timeout=START_SECONDS)
        self.client.wait_for_workers(2, timeout=START_SECONDS)

    def _spawn(self, *args: str) -> None:
        log = open(self.root / f"{args[0]}-{len(self.processes)}.log", "wb")
        self.processes.append(subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=log,
                                               stderr=subprocess.STDOUT, start_new_session=True))

    def _check_alive(self) -> None:
        for p in self.processes:
            if p.poll() is not None:
                raise RuntimeError(f"{p.args} exited with {p.returncode}; see {self.root}")

    @property
    def spec(self) -> ClusterSpec:
        return ClusterSpec(scheduler_file=str(self.scheduler_file))

    def cli_options(self) -> list[str]:
        """The command-line options that name this cluster."""
        return ["--scheduler-file", str(self.scheduler_file)]

    def worker_pids(self) -> dict[str, int]:
        """Worker address -> pid of the worker process (the nanny's child)."""
        return self.client.run(os.getpid)

    def kill_busy_worker(self, timeout: float = STEP_SECONDS, *, task: str = "") -> str:
        """SIGKILL a worker process while it is running a task (whose key starts with `task`);
        return its address."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            busy = [address for address, keys in self.client.processing().items()
                    if any(str(key).startswith(task) for key in keys)]
            if busy:
                pid = self.worker_pids()[busy[0]]
                os.kill(pid, signal.SIGKILL)
                return busy[0]
            time.sleep(0.05)
        raise TimeoutError("no worker became busy")

    def wait_for_workers(self) -> None:
        """Wait until both workers are back (the nanny restarts a killed one)."""
        self.client.wait_for_workers(2, timeout=START_SECONDS)

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()
        for p in self.processes:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.processes:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=15)


class InProcessCluster:
    """A scheduler and one single-threaded worker in this process, on 127.0.0.1 (port 0)."""

    def __init__(self) -> None:
        self.local = None
        self.client = None
        self.saved_environment: dict[str, str | None] = {}

    def start(self) -> None:
        # the worker plugin sets what the worker's environment leaves unset: here, this process's
        for name, value in WORKER_ENVIRONMENT.items():
            self.saved_environment[name] = os.environ.get(name)
            os.environ[name] = value
        # no dashboard, and the scheduler's HTTP routes on a free port (not 8787, maybe taken)
        self.local = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                              host="127.0.0.1", scheduler_port=0, protocol="tcp",
                                              scheduler_kwargs={"dashboard": False,
                                                                "dashboard_address": "127.0.0.1:0"})
        self.client = distributed.Client(self.local, timeout=START_SECONDS)

    @property
    def spec(self) -> ClusterSpec:
        return ClusterSpec(scheduler=self.local.scheduler_address)

    def cli_options(self) -> list[str]:
        return ["--scheduler", self.local.scheduler_address]

    def stop(self) -> None:
        for closable in (self.client, self.local):
            if closable is not None:
                closable.close()
        for name, value in self.saved_environment.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="module")
def clusters():
    """Start a cluster of a kind once for the module, when a test first asks for it."""
    started: dict[str, Cluster | InProcessCluster] = {}

    def get(kind: str, root: Path | None = None):
        if kind not in started:  # recorded before it starts: torn down also when it fails to
            started[kind] = Cluster(root) if kind == "processes" else InProcessCluster()
            started[kind].start()
        return started[kind]

    try:
        yield get
    finally:
        for c in started.values():
            c.stop()


@pytest.fixture(scope="module")
def processes(clusters, tmp_path_factory):
    """One scheduler and two single-threaded workers with a memory limit, as OS processes."""
    return clusters("processes", tmp_path_factory.mktemp("dask"))


@pytest.fixture(params=["in-process", pytest.param("processes", marks=pytest.mark.slow)])
def cluster(request, clusters):
    """The in-process cluster (default run), and the worker processes (slow)."""
    if request.param == "processes":
        return request.getfixturevalue("processes")
    return clusters("in-process")


def bounded(function, *args, seconds: float = STEP_SECONDS, **kwargs):
    """Run a call in a thread; fail the test (not hang) when it takes longer than ``seconds``."""
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(function, *args, **kwargs).result(timeout=seconds)
    finally:
        pool.shutdown(wait=False)


def crcs(directory: Path, *, max_pieces: int = 4) -> dict[str, int]:
    return {m.name: int(master.read_attrs(master.table_path(directory, m))["checksum_crc32"])
            for m in all_materials(max_pieces)}


def copy_tables(source: Path, target: Path, *, max_pieces: int) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for m in all_materials(max_pieces):
        shutil.copy(master.table_path(source, m), master.table_path(target, m))


@pytest.fixture(scope="module")
def local4(built_tables) -> Path:
    """Every table up to 4 pieces, built by the local pool."""
    return built_tables(4)


@pytest.fixture(scope="module")
def cluster4(processes, tmp_path_factory):
    """Every table up to 4 pieces built on the cluster, and the build's report."""
    directory = tmp_path_factory.mktemp("cluster4")
    report = bounded(builder.build, 4, directory=directory, progress=False,
                     executor=DaskPool(processes.spec))
    return directory, report


# --- builds -------------------------------------------------------------------------------


@pytest.mark.slow
def test_cluster_build_matches_local_build(cluster4, local4, capsys):
    directory, report = cluster4
    assert crcs(directory) == crcs(local4)
    assert len(report.built) == len(all_materials(4))
    assert {t["checksum"] for r in report.records for t in r.tables} == set(crcs(local4).values())
    # every pair ran in a worker process, none in this one (which of the two workers takes a
    # tiny 4-piece pair is the scheduler's choice: it may keep them all where their inputs are)
    assert report.records and all(r.pid != os.getpid() for r in report.records)
    assert egtb_main(["verify", "--tables", str(directory), "--jobs", "1", "--json", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["ok"] and result["reference_listed"] > 0 and result["reference_differing"] == []
    assert not list(directory.glob(master.TMP_GLOB))
    assert "worker: " in (directory / builder.LOG_NAME).read_text()  # worker log lines collected


@pytest.mark.slow
def test_no_material_starts_before_its_dependencies_finished(cluster4):
    _, report = cluster4
    records = {r.key: r for r in report.records}
    pairs = planner.plan_pairs(4)
    assert set(records) == {p.key for p in pairs}
    for pair in pairs:
        for dep in pair.depends:
            assert records[pair.key].started >= records[dep].finished, (pair.key, dep)


@pytest.mark.slow
def test_resume_on_the_cluster_skips_complete_files(processes, cluster4):
    directory, _ = cluster4
    report = bounded(builder.build, 4, directory=directory, progress=False, executor=DaskPool(processes.spec))
    assert report.built == [] and len(report.skipped) == len(all_materials(4))


def test_cli_build_on_the_cluster(cluster, local4, tmp_path, capsys):
    copy_tables(local4, tmp_path, max_pieces=2)
    status = bounded(egtb_main, ["build", "--pieces", "3", "--tables", str(tmp_path), "--quiet", "--json",
                                 *cluster.cli_options()])
    assert status == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["built"]) == len(all_materials(3)) - len(all_materials(2))
    assert crcs(tmp_path, max_pieces=3) == crcs(local4, max_pieces=3)


cloudpickle = pytest.importorskip("cloudpickle", reason="Dask is not installed: pip install .[distributed]")
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this test module


def _fail_pair(key: str | None) -> None:
    """In a worker: make solving the pair ``key`` raise (None: undo)."""
    from egtb.builder import pipeline as worker_builder
    original = getattr(worker_builder, "_original_solve_pair", worker_builder.solve_pair)
    worker_builder._original_solve_pair = original
    if key is None:
        worker_builder.solve_pair = original
        return

    def failing(materials, tables, progress=None, **options):
        if materials[0].name == key:
            raise SolverError(f"injected failure in {key}")
        return original(materials, tables, progress, **options)

    worker_builder.solve_pair = failing


def test_the_cluster_answers_the_executor_interface_as_the_local_pool_does(cluster):
    # functions the workers can import (this module is not importable there); dict shows its `after`
    tasks = [Task("sum", dict, (), {"first": 1}, after=("a", "b")), Task("a", operator.add, (10, 0)),
             Task("b", operator.add, (20, 0), priority=5)]  # "sum" comes first, before what it waits for
    local = {done.task.key: done.result for done in LocalPool(2).run(tasks)}
    remote = bounded(lambda: {done.task.key: done.result for done in DaskPool(cluster.spec).run(tasks)})
    assert remote == local == {"a": 10, "b": 20, "sum": {"first": 1, "after": [10, 20]}}


@pytest.mark.slow
def test_a_result_lost_with_its_worker_is_computed_again(processes):
    """A task that finished on a worker killed before its result was collected is run again."""
    cluster = processes
    cluster.wait_for_workers()
    client = cluster.client
    # functions the scheduler can import: the slow task takes a second
    run = DaskPool(client=client).run([Task("fast", operator.add, (1, 0)),
                                       Task("slow", subprocess.getoutput, ("sleep 1; echo slow",))])
    first = bounded(next, run)
    assert (first.task.key, first.result) == ("fast", 1)
    deadline = time.monotonic() + STEP_SECONDS
    while not (held := [(key, workers) for key, workers in client.who_has().items()
                        if key.startswith("slow-") and workers]):
        assert time.monotonic() < deadline, "the slow task did not finish"
        time.sleep(0.01)
    (key, workers), = held
    os.kill(cluster.worker_pids()[workers[0]], signal.SIGKILL)
    while client.futures[key].status != "lost":  # the scheduler told the client; the rerun takes 1 s
        assert time.monotonic() < deadline, f"the client was not told that {key} was lost"
        time.sleep(0.01)
    second = bounded(next, run)
    assert (second.task.key, second.result) == ("slow", "slow")
    cluster.wait_for_workers()


def test_a_failing_material_stops_the_build_naming_it(cluster, local4, tmp_path):
    key = "1k-1m1k"
    assert key in {p.key for p in planner.plan_pairs(3)}
    copy_tables(local4, tmp_path, max_pieces=2)
    cluster.client.run(_fail_pair, key)
    try:
        with pytest.raises(SolverError, match="1k-1m1k.*injected failure"):
            bounded(builder.build, 3, directory=tmp_path, progress=False, executor=DaskPool(cluster.spec))
    finally:
        cluster.client.run(_fail_pair, None)
    failed = next(p for p in planner.plan_pairs(3) if p.key == key)
    assert not any(master.table_path(tmp_path, m).exists() for m in failed.materials)


def test_bad_cluster_setup_fails_before_any_work(tmp_path):
    with pytest.raises(ClusterError, match="does not exist"):
        connect(ClusterSpec(scheduler_file=str(tmp_path / "nope.json")))
    assert egtb_main(["build", "--pieces", "2", "--tables", str(tmp_path), "--quiet",
                      "--scheduler-file", str(tmp_path / "nope.json")]) == 2
    assert not list(tmp_path.glob("*.h5"))


@pytest.mark.slow
def test_worker_killed_mid_build_still_gives_identical_files(processes, local4, tmp_path):
    cluster = processes
    copy_tables(local4, tmp_path, max_pieces=3)
    done = {}
    thread = threading.Thread(target=lambda: done.update(report=builder.build(
        4, directory=tmp_path, progress=False, executor=DaskPool(cluster.spec))), daemon=True)
    thread.start()
    cluster.kill_busy_worker()
    thread.join(STEP_SECONDS)
    assert not thread.is_alive(), "build did not finish after a worker was killed"
    assert crcs(tmp_path) == crcs(local4)
    assert not list(tmp_path.glob(master.TMP_GLOB))
    assert len(done["report"].built) == len(all_materials(4)) - len(all_materials(3))
    cluster.wait_for_workers()


# --- one pair over the cluster: unit tasks ---------------------------------------------------

#: A 5-piece pair of 378 units in 13 waves whose exits reach 4-piece tables and two 5-piece pairs.
SPLIT_PAIR = "1k-2m2k"
SPLIT_NEEDS = ("1k-4k", "1k-1m3k")


def five_piece_pair(key: str) -> planner.Pair:
    return next(p for p in planner.plan_pairs(5) if p.key == key)


@pytest.fixture(scope="module")
def split_local(local4, tmp_path_factory) -> Path:
    """What the split pair reads (tables up to 4 pieces, two 5-piece pairs) and the pair itself,
    built by the local pool."""
    directory = tmp_path_factory.mktemp("split_local")
    copy_tables(local4, directory, max_pieces=4)
    for key in SPLIT_NEEDS + (SPLIT_PAIR,):
        pair = five_piece_pair(key)
        pipeline.build_pair(directory, pair, planner.dependency_materials(pair))
    return directory


def split_pair_checksums(directory: Path) -> dict[str, int]:
    return {m.name: int(master.read_attrs(master.table_path(directory, m))["checksum_crc32"])
            for m in five_piece_pair(SPLIT_PAIR).materials}


def build_split(cluster, split_local: Path, directory: Path) -> dict:
    """Build the split pair on the cluster as unit tasks into `directory`; its record."""
    pair = five_piece_pair(SPLIT_PAIR)
    for material in planner.dependency_materials(pair):
        shutil.copy(master.table_path(split_local, material), master.table_path(directory, material))
    records = list(builder.run_pairs([pair], directory, builder.BuildConfig(
        rules="all", split_pairs=builder.Split(positions=1, task_positions=200_000)), executor=DaskPool(cluster.spec)))
    assert len(records) == 1
    return records[0]


@pytest.mark.slow
def test_a_pair_split_into_unit_tasks_gives_the_local_files(processes, split_local, tmp_path):
    record = bounded(build_split, processes, split_local, tmp_path)
    assert split_pair_checksums(tmp_path) == split_pair_checksums(split_local)
    assert record.split > 13  # more tasks than waves: waves were cut
    # which worker runs which task is the scheduler's choice (a busy machine may leave one idle);
    # the test below kills a worker in the middle of the pair's tasks, and the others finish it
    assert 1 <= len(record.workers) <= 2
    assert not list(tmp_path.glob("*.pair.tmp"))


@pytest.mark.slow
def test_a_worker_killed_in_a_split_pair_still_gives_the_local_files(processes, split_local, tmp_path):
    cluster = processes
    done = {}
    thread = threading.Thread(target=lambda: done.update(record=build_split(cluster, split_local,
                                                                           tmp_path)), daemon=True)
    thread.start()
    cluster.kill_busy_worker(task="egtb-units-")  # in the middle of the pair's unit tasks
    thread.join(STEP_SECONDS)
    assert not thread.is_alive(), "the split pair did not finish after a worker was killed"
    assert split_pair_checksums(tmp_path) == split_pair_checksums(split_local)
    assert done["record"].units == len(pipeline.unit_order(five_piece_pair(SPLIT_PAIR).materials))
    cluster.wait_for_workers()


@pytest.fixture(scope="module")
def split_native_local(split_local, tmp_path_factory) -> Path:
    """The split pair built compact-native by the local pool (its dependencies' masters beside)."""
    directory = tmp_path_factory.mktemp("split_native_local")
    pair = five_piece_pair(SPLIT_PAIR)
    for material in planner.dependency_materials(pair):
        shutil.copy(master.table_path(split_local, material), master.table_path(directory, material))
    pipeline.build_pair(directory, pair, planner.dependency_materials(pair),
                        contents=planner.contents_of(pair, native=True))
    return directory


def native_pair_files(directory: Path) -> dict[str, bytes]:
    """The split pair's compact files and marks files, by name (a compact-native pair has no master)."""
    paths = [q for m in five_piece_pair(SPLIT_PAIR).materials for path in compact_paths(directory, m)
             for q in (path, marks_path(path))]
    return {path.name: path.read_bytes() for path in paths}


@pytest.mark.slow
def test_a_worker_killed_in_a_compact_native_split_pair_still_gives_the_local_files(
        processes, split_local, split_native_local, tmp_path):
    cluster = processes
    pair = five_piece_pair(SPLIT_PAIR)
    for material in planner.dependency_materials(pair):
        shutil.copy(master.table_path(split_local, material), master.table_path(tmp_path, material))
    done = {}

    def run() -> None:
        done["records"] = list(builder.run_pairs(
            [pair], tmp_path, builder.BuildConfig(native=True, split_pairs=builder.Split(
                positions=1, task_positions=200_000)), executor=DaskPool(cluster.spec)))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    cluster.kill_busy_worker(task="egtb-units-")  # in the middle of the pair's unit tasks
    thread.join(STEP_SECONDS)
    assert not thread.is_alive(), "the compact-native split pair did not finish after a worker was killed"
    assert len(done["records"]) == 1 and done["records"][0].split > 13
    expected = native_pair_files(split_native_local)
    assert len(expected) == 6 * len(pair.materials)
    assert native_pair_files(tmp_path) == expected
    assert not any(master.table_path(tmp_path, m).exists() for m in pair.materials)
    cluster.wait_for_workers()


# --- tournaments --------------------------------------------------------------------------


def totals(records) -> dict[str, float]:
    points: dict[str, float] = {}
    for r in records:
        points[r.black] = points.get(r.black, 0.0) + r.black_score
        points[r.white] = points.get(r.white, 0.0) + 1.0 - r.black_score
    return points


def games_by_id(records) -> dict[str, dict]:
    """Each game's record without its clock readings."""
    out = {}
    for r in records:
        data = json.loads(r.to_json())
        for reading in ("time_used", "move_times", "clocks", "final_clocks"):
            data["result"].pop(reading, None)
        out[r.game_id] = data
    return out


@pytest.fixture(scope="module")
def local_games(tmp_path_factory):
    """A 200-game random-mover match played by the local pool."""
    out = tmp_path_factory.mktemp("local-games")
    return run_tournament(TournamentConfig(["random", "random"], games=GAMES, seed=7),
                          out_dir=out, concurrency=2, progress=False)


def test_cluster_tournament_matches_local(cluster, local_games, tmp_path):
    config = TournamentConfig(("random", "random"), games=GAMES, seed=7)
    result = bounded(run_tournament, config, out_dir=tmp_path, progress=False, executor=DaskPool(cluster.spec))
    assert len(result.records) == GAMES
    assert totals(result.records) == totals(local_games.records)
    for player in local_games.players:
        assert pair_counts(result.records, player).as_list() == pair_counts(local_games.records, player).as_list()
    assert games_by_id(result.records) == games_by_id(local_games.records)  # the very same games


@pytest.mark.slow
def test_worker_killed_mid_tournament_counts_every_game_once(processes, local_games, tmp_path):
    cluster = processes
    cluster.wait_for_workers()
    games = DaskPool(cluster.spec)
    done = {}
    config = TournamentConfig(["random", "random"], games=GAMES, seed=7)
    thread = threading.Thread(target=lambda: done.update(result=run_tournament(
        config, out_dir=tmp_path, progress=False, executor=games)), daemon=True)
    thread.start()
    deadline = time.monotonic() + STEP_SECONDS
    # Count finished lines without load_records: it cuts a half-written last line off the
    # file (resume's repair), which would drop a record the running tournament is appending.
    while not (tmp_path / "games.jsonl").exists() or (tmp_path / "games.jsonl").read_bytes().count(b"\n") < 10:
        assert time.monotonic() < deadline and thread.is_alive()
        time.sleep(0.02)
    cluster.kill_busy_worker()
    thread.join(STEP_SECONDS)
    assert not thread.is_alive(), "tournament did not finish after a worker was killed"
    records = load_records(tmp_path / "games.jsonl")
    assert len(records) == GAMES == len({r.game_id for r in records})
    assert totals(records) == totals(local_games.records)
    assert len(games.workers_seen) >= 2
    cluster.wait_for_workers()


def test_sprt_stops_a_match_on_the_cluster(cluster, tmp_path):
    config = TournamentConfig(("depth=2", "random"), games=400, seed=3, sprt=SprtSettings(0, 200))
    result = bounded(run_tournament, config, out_dir=tmp_path, progress=False, executor=DaskPool(cluster.spec))
    assert result.sprt is not None and result.sprt.decision is not None
    records = load_records(tmp_path / "games.jsonl")
    assert len(records) < 400 and len(records) == len({r.game_id for r in records}) == len(result.records)
    assert not [k for k, v in cluster.client.processing().items() if v]  # outstanding futures cancelled


def test_cli_tournament_on_the_cluster(cluster, tmp_path, capsys):
    from tournament.cli import main as tournament_main
    status = bounded(tournament_main, ["run", "--engine", "random", "--engine", "random", "--games", "20",
                                       "--openings", "start", "--quiet", "--out", str(tmp_path),
                                       *cluster.cli_options()])
    assert status == 0
    assert len(load_records(tmp_path / "games.jsonl")) == 20
    assert "20/20 games" in capsys.readouterr().out
