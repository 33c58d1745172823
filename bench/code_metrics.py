"""Code-structure figures of the packages, for a restructuring's before and after.

Prints, for `egtb` and `tournament` (or the packages given): the files over a line
limit, the longest functions, the functions with the most parameters, and totals.
With ``--at REV`` it reads the files of that git revision instead of the work tree,
so one run can print both sides:

    .venv/bin/python bench/code_metrics.py --at ab90c5d
    .venv/bin/python bench/code_metrics.py

Counts: a file's lines as ``wc -l`` counts them; a function's lines from its ``def``
to its last statement (docstring included); its parameters every named one
(``self``/``cls`` not counted, ``*args``/``**kwargs`` counted once each).
"""

from __future__ import annotations

import argparse
import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sources(packages: list[str], at: str | None) -> dict[str, str]:
    """Path -> text of every .py file of the packages, in the work tree or at revision `at`."""
    if at is None:
        return {str(p.relative_to(ROOT)): p.read_text() for pkg in packages for p in sorted((ROOT / pkg).rglob("*.py"))}
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", at, *packages], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    return {name: subprocess.run(["git", "show", f"{at}:{name}"], cwd=ROOT, check=True, capture_output=True,
                                 text=True).stdout for name in names if name.endswith(".py")}


def functions(path: str, text: str):
    """(name, lines, parameters) of every function and method of a file."""
    for node in ast.walk(ast.parse(text, filename=path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            named = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs if a.arg not in ("self", "cls")]
            count = len(named) + (args.vararg is not None) + (args.kwarg is not None)
            yield f"{path}:{node.name}", node.end_lineno - node.lineno + 1, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("packages", nargs="*", default=["egtb", "tournament"])
    parser.add_argument("--at", default=None, metavar="REV", help="read the files of this git revision")
    parser.add_argument("--limit", type=int, default=500, help="file line limit (default 500)")
    parser.add_argument("--top", type=int, default=8, help="functions listed per table (default 8)")
    args = parser.parse_args()
    files = sources(args.packages, args.at)
    lines = {path: text.count("\n") for path, text in files.items()}
    funcs = [f for path, text in files.items() for f in functions(path, text)]
    print(f"# {args.at or 'work tree'}: {len(files)} files, {sum(lines.values()):,} lines, {len(funcs):,} functions")
    over = sorted(((n, p) for p, n in lines.items() if n > args.limit), reverse=True)
    print(f"files over {args.limit} lines: {len(over)}")
    for n, p in over:
        print(f"  {n:5d}  {p}")
    print("longest functions:")
    for name, n, _ in sorted(funcs, key=lambda f: -f[1])[:args.top]:
        print(f"  {n:5d}  {name}")
    print("most parameters:")
    for name, _, n in sorted(funcs, key=lambda f: -f[2])[:args.top]:
        print(f"  {n:5d}  {name}")
    many = sum(1 for f in funcs if f[2] > 8)
    print(f"functions with more than 8 parameters: {many}")


if __name__ == "__main__":
    main()
