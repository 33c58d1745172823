"""Every Python example of README.md and docs/*.md runs, against a small table set.

The ```python blocks of one file run in order in one namespace (a later block may use a name
an earlier one set, as a reader would), with the table directories they name replaced by the
session's 3-piece tables: "data/egtb" by master files, "data/egtb-compact" by the compact files
of those tables (.wld, .wcdf, .dtz and their marks) and "data/egtb-wld" by their .wld files
alone. docs/web.md's /api/moves, 404 and engine-move examples are compared with the real API.
A block that genuinely cannot run here (a cluster, hours of build) starts with the line
``# not run by the tests: <why>``; the list below holds the count of such blocks, so that
adding one is a decision.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from egtb.builder import contents
from egtb.formats.values import Wdl
from egtb.probe.tablebase import MissingRuleLayerError, ProbeResult, Tablebase

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: The first line of a block that is not run, followed by the reason.
NOT_RUN = "# not run by the tests:"
#: The blocks not run, by document: keep it short (each says why in its first line).
EXPECTED_NOT_RUN = {"distributed.md": 2}
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks_of(document: Path) -> list[str]:
    """The ```python blocks of a Markdown file, in order."""
    return BLOCK.findall(document.read_text())


def runnable(blocks: list[str]) -> list[str]:
    return [block for block in blocks if not block.startswith(NOT_RUN)]


@pytest.fixture(scope="module")
def table_dirs(built_tables, compact_tables, tmp_path_factory) -> dict[str, Path]:
    """The directories the examples' paths stand for (read only: shared with other tests)."""
    wld = tmp_path_factory.mktemp("egtb-wld")
    compact = compact_tables(3)
    for path in compact.iterdir():
        if ".wld" in path.name:
            os.link(path, wld / path.name)
    return {"data/egtb-compact": compact, "data/egtb-wld": wld, "data/egtb": built_tables(3)}


def with_tables(code: str, table_dirs: dict[str, Path]) -> str:
    """The code with each example path replaced by its directory (the longest names first)."""
    for name in sorted(table_dirs, key=len, reverse=True):
        code = re.sub(rf"([\"']){re.escape(name)}(?=[/\"'])", lambda m: m.group(1) + str(table_dirs[name]), code)
    return code


def test_the_documents_have_examples_and_few_are_left_out():
    counts = {doc.name: len(blocks_of(doc)) for doc in DOCUMENTS}
    assert counts["README.md"] >= 1 and counts["table-format.md"] >= 3
    left_out = {doc.name: len(blocks_of(doc)) - len(runnable(blocks_of(doc))) for doc in DOCUMENTS}
    assert {name: n for name, n in left_out.items() if n} == EXPECTED_NOT_RUN
    for doc in DOCUMENTS:
        for block in blocks_of(doc):
            if block.startswith(NOT_RUN):
                assert len(block.splitlines()[0]) > len(NOT_RUN) + 5, f"{doc.name}: say why it is not run"


def test_paths_are_replaced_whole():
    dirs = {"data/egtb": Path("/t/m"), "data/egtb-compact": Path("/t/c")}
    code = 'Tablebase("data/egtb"); open_table("data/egtb/2k-1k.h5"); Tablebase("data/egtb-compact")'
    assert with_tables(code, dirs) == 'Tablebase("/t/m"); open_table("/t/m/2k-1k.h5"); Tablebase("/t/c")'


@pytest.mark.parametrize("document", [doc for doc in DOCUMENTS if runnable(blocks_of(doc))],
                         ids=lambda doc: doc.name)
def test_examples_run(document, table_dirs, monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)  # an example that writes files writes them here
    namespace: dict = {"__name__": f"example_{document.stem}"}
    for number, block in enumerate(runnable(blocks_of(document)), start=1):
        code = compile(with_tables(block, table_dirs), f"{document.name} python block {number}", "exec")
        exec(code, namespace)  # noqa: S102 - the examples of our own documents
    capsys.readouterr()


# --- claims of the documents, checked against the code ----------------------------------

DOTTED = re.compile(r"`((?:egtb|tournament)\.[A-Za-z_][\w.]*)(?:\([^`]*\))?`")


def resolve(name: str) -> object:
    """The object a dotted name such as ``egtb.formats.compact.layout.MAX_DTZ_CODE`` names."""
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            found = getattr(found, attribute)
        return found
    raise ImportError(name)


def test_every_dotted_name_in_the_documents_exists():
    names = {(doc.name, m.group(1).rstrip(".")) for doc in DOCUMENTS for m in DOTTED.finditer(doc.read_text())}
    names = {(doc, name) for doc, name in names if not name.endswith((".py", ".md", ".h5", ".tsv"))}
    assert len(names) >= 40
    missing = []
    for doc, name in sorted(names):
        try:
            resolve(name)
        except (ImportError, AttributeError):
            missing.append(f"{doc}: {name}")
    assert not missing


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def subcommand_flags(parser: argparse.ArgumentParser) -> dict[str, set[str]]:
    return {name: {o for a in p._actions for o in a.option_strings} for name, p in subcommands(parser).items()}


def test_the_readme_names_the_commands_that_take_each_shared_flag():
    from egtb.cli import build_parser as egtb_parser
    from tournament.cli import build_parser as tournament_parser
    flags = {**{f"egtb {k}": v for k, v in subcommand_flags(egtb_parser()).items()},
             **{f"tournament {k}": v for k, v in subcommand_flags(tournament_parser()).items()}}
    having = {flag: {command for command, options in flags.items() if flag in options}
              for flag in ("--tables", "--out", "--jobs", "--quiet", "--json", "--scheduler")}
    assert having["--tables"] == {"egtb build", "egtb compact", "egtb stats", "egtb verify", "egtb probe",
                                  "tournament run", "tournament hub-engine", "tournament play", "tournament review"}
    assert having["--out"] == {"egtb compact", "tournament run"}
    assert having["--jobs"] == having["--quiet"] == {"egtb build", "egtb compact", "egtb verify", "tournament run"}
    assert having["--json"] == {c for c in flags if c.startswith("egtb ")} | {"tournament run", "tournament review"}
    assert having["--scheduler"] == {"egtb build", "tournament run"}
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "`--tables DIR` a table directory (`egtb build`, `compact`, `stats`, `verify`, `probe`;" in readme


def test_wld_files_alone_answer_rule_free_only(table_dirs):
    """docs/table-format.md: with .wld files alone probe() raises MissingRuleLayerError."""
    with Tablebase(table_dirs["data/egtb-wld"]) as tb:
        with pytest.raises(MissingRuleLayerError):
            tb.probe("W:WK10,K14:BK1")
        assert tb.probe("W:WK10,K14:BK1", rule_free=True) == ProbeResult(Wdl.WIN, None)
    with Tablebase(table_dirs["data/egtb-compact"]) as tb:
        result = tb.probe("W:WK10,K14:BK1")
    assert (result.value, result.dtw, result.dtz, result.rule, result.counter) == (Wdl.WIN, None, 15, "wcdf", 0)


def test_the_rules_default_is_auto_and_build_compact_writes_dtz_files(capsys):
    from egtb.cli import build_parser as egtb_parser
    build = subcommands(egtb_parser())["build"]
    assert build.get_default("rules") == contents.AUTO
    assert "default `auto`" in (ROOT / "docs" / "table-format.md").read_text()
    assert ".dtz" in " ".join(build.format_help().split())


# --- docs/web.md's examples against the real API ---------------------------------------

JSON_BLOCK = re.compile(r"^```json\n(.*?)^```", re.MULTILINE | re.DOTALL)


def web_example(request: str) -> tuple[int, dict]:
    """(status, answer) of the docs/web.md example whose first line is ``request``."""
    for block in JSON_BLOCK.findall((ROOT / "docs" / "web.md").read_text()):
        first, _, rest = block.partition("\n")
        if first == request:
            status, body = (int(rest[:3]), rest[4:]) if rest[:3].isdigit() else (200, rest)
            return status, json.loads(body)
    raise AssertionError(f"docs/web.md has no example {request!r}")


@pytest.fixture(scope="module")
def web_client(table_dirs):
    pytest.importorskip("starlette", reason="the web extras are missing: pip install -e '.[web]'")
    from starlette.testclient import TestClient
    from tournament.web.app import create_app
    from tournament.web.engines import EngineService
    engines = EngineService(tables_dir=table_dirs["data/egtb"])
    with engines, TestClient(create_app(tables_dir=table_dirs["data/egtb"], engines=engines),
                             base_url="http://127.0.0.1") as client:
        yield client


def test_the_web_moves_example_is_the_api_s_answer(web_client):
    status, shown = web_example("GET /api/moves?fen=B:W6,7,14,15,31:B2,20,26,28")
    answer = web_client.get("/api/moves", params={"fen": "B:W6,7,14,15,31:B2,20,26,28"}).json()
    date = re.compile(r'\[Date "[^"]*"\]')
    assert date.sub("", shown.pop("pdn")) == date.sub("", answer.pop("pdn"))  # all the tags, the day apart
    assert (status, shown) == (200, answer)


def test_the_web_404_example_lists_black_s_moves(web_client):
    status, shown = web_example("GET /api/probe?fen=B:W18,24,25,27:B12,16")
    response = web_client.get("/api/probe", params={"fen": "B:W18,24,25,27:B12,16"})
    answer = response.json()
    assert status == response.status_code == 404
    assert shown["moves"] == answer["moves"] and set(shown) == set(answer)


def test_the_web_engine_move_example_has_the_api_s_fields(web_client):
    _, shown = web_example('POST /api/engine-move {"fen": "B:W6,7,14,15,31:B2,20,26,28", '
                           '"history": ["2x9x18"], "strength": "easy"}')
    answer = web_client.post("/api/engine-move", json={"fen": "B:W6,7,14,15,31:B2,20,26,28",
                                                       "history": ["2x9x18"], "strength": "easy"}).json()
    shown.pop("seconds"), answer.pop("seconds")
    assert shown == answer


# --- docs/distributed.md's 10-piece figures are bench/plan_distributed.py's ------------


def plan_line(*options: str) -> str:
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "plan_distributed.py"), "--pieces", "10",
                             *options], capture_output=True, text=True, check=True, cwd=ROOT)
    return " ".join(result.stdout.split())


def test_the_ten_piece_figures_are_the_plan_s():
    full, five = plan_line(), plan_line("--max-per-side", "5")
    hours = re.search(r"([\d,]+) core-hours \(up to 10: ([\d,]+)\); cores for one week: (\d+)", full)
    five_hours = re.search(r"\(up to 10: ([\d,]+)\); cores for one week: (\d+)", five)
    disk = re.search(r"\(up to 10: ([\d,.]+) GiB\)", full)
    assert hours and five_hours and disk
    text = " ".join((ROOT / "docs" / "distributed.md").read_text().split())
    assert (f"{hours[1]} core-hours at the measured 8-piece rate ({hours[2]} with everything below), "
            f"{hours[3]} cores for one week ({five_hours[2]} with at most five pieces a side: "
            f"{five_hours[1]} core-hours)") in text
    assert f"({float(disk[1].replace(',', '')) / 1024:.1f} with everything below)" in text


def test_the_move_rule_figures_call_no_measured_count_unmeasured():
    text = (ROOT / "docs" / "move-rule-figures.md").read_text()
    measured = {int(m[1]) for m in re.finditer(r"^\| (\d+) \| (?:wcdf|crowning|forty-plies) \|", text, re.MULTILINE)}
    assert measured == {2, 3, 4, 5, 6}
    words = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven"}
    flat = " ".join(text.lower().split())
    for n in measured:
        assert f"{words[n]} pieces are not measured" not in flat and f"{n} pieces are not measured" not in flat
