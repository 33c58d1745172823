"""The package's errors: every ValueError egtb raises on purpose is an EgtbError (README.md says so).

TypeError for an argument of the wrong type and IndexError for an index out of range stay the
builtins, as Python's own containers raise them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import egtb
from egtb import errors
from egtb.positions.material import Material
from egtb.probe.tablebase import Tablebase
from egtb.rules.board import Board

PACKAGE = Path(egtb.__file__).resolve().parent


def raised_builtin_value_errors() -> list[str]:
    """``file:line`` of every ``raise ValueError(...)`` in the egtb package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                name = node.exc.func
                if isinstance(name, ast.Name) and name.id == "ValueError":
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    return found


def test_no_plain_value_error_is_raised_in_egtb():
    assert sum(1 for _ in PACKAGE.rglob("*.py")) > 40  # the scan sees the package
    assert raised_builtin_value_errors() == []


@pytest.mark.parametrize("name", ["InvalidArgumentError", "InvalidPositionError", "InvalidDataError"])
def test_the_new_errors_are_egtb_errors_and_value_errors(name):
    cls = getattr(errors, name)
    assert issubclass(cls, errors.EgtbError) and issubclass(cls, ValueError)
    assert name in errors.__all__ and getattr(egtb, name) is cls


def test_probe_with_an_unknown_rule_or_a_counter_out_of_range_raises_egtb_errors(built_tables):
    with Tablebase(built_tables(3)) as tb:
        with pytest.raises(errors.InvalidArgumentError, match="unknown draw rule 'fifty-moves'"):
            tb.probe("B:WK10:BK1", rule="fifty-moves")
        with pytest.raises(errors.InvalidArgumentError, match="counter 81 is outside 0..80"):
            tb.probe("B:WK10:BK1", rule="wcdf", counter=81)


def test_callers_catching_value_error_still_catch_them():
    for bad in (lambda: Board(rule="fifty-moves"), lambda: Material.parse("2k"), lambda: Material(-1, 0, 0, 0)):
        with pytest.raises(ValueError) as caught:
            bad()
        assert isinstance(caught.value, errors.EgtbError)
