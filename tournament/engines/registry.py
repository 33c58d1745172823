"""Engine registry: turn a short spec string into an Engine.

Specs:

- ``random``: the random mover.
- ``easy``, ``medium``, ``hard``: the alpha-beta searcher at a named strength.
- ``depth=N``, ``time=S`` (and combinations such as ``depth=8,time=0.5``;
  ``noise=C`` adds root-score noise, ``pv_fill=N`` lets N nodes fill the reported line):
  the searcher with those settings.
- ``perfect``: the perfect-play table engine (needs ``tables_dir``); its option
  ``fallback=SPEC`` names the engine that plays outside the tables (default: a
  short search).
- ``package.module:Class``: a plug-in class (or factory) imported by path.
- ``entrypoint:NAME``: a plug-in registered in the entry-point group
  ``draughts_tournament.engines``.
- ``hub:COMMAND ARGS...``: an external program speaking the Hub protocol.
- ``cb:PATH``: a CheckerBoard engine library (``getmove``/``enginecommand``), loaded
  in its own process (``cblib:PATH`` loads it in this one; see
  :mod:`tournament.engines.checkerboard`).

Plug-in classes are called with the keyword arguments ``seed`` and
``tables_dir`` when their signature accepts them, and with the engine's
options (``option.NAME=VALUE``) as keyword arguments; Hub engines get the
options as ``set-param`` commands; the built-in searcher takes ``depth``,
``time``, ``noise``, ``tt_bits`` and ``tables`` (``search``: its endgame tables
score every node of its search they cover, the default; ``root``: only the
positions it plays are looked up).

>>> engine = make_engine("depth=3")
>>> engine.depth
3
>>> make_engine("random", seed=1).name
'random'
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import shlex
from pathlib import Path
from typing import Any, Callable

from tournament.engines.base import Engine
from tournament.engines.random import RandomEngine
from tournament.engines.strengths import STRENGTHS

__all__ = ["ENTRY_POINT_GROUP", "make_engine", "load_plugin", "builtin_specs"]

#: Entry-point group where third-party packages register engine classes.
ENTRY_POINT_GROUP = "draughts_tournament.engines"

_SEARCH_KEYS = {"depth": int, "time": float, "noise": int, "pv_fill": int}


def builtin_specs() -> list[str]:
    """Names of the built-in engines (besides ``depth=N`` and ``time=S``).

    >>> builtin_specs()
    ['random', 'easy', 'medium', 'hard', 'perfect']
    """
    return ["random", *STRENGTHS, "perfect"]


def make_engine(spec: str, *, tables_dir: str | Path | None = None, seed: int | None = None,
                options: dict[str, Any] | None = None) -> Engine:
    """The Engine named by ``spec`` (see the module docstring); ValueError if unknown.

    ``options`` are the engine's own settings (see the module docstring); one the
    engine does not take raises ValueError.

    >>> make_engine("medium").depth
    6
    >>> make_engine("easy", options={"noise": 5}).noise
    5
    """
    spec = spec.strip()
    options = dict(options or {})
    if spec == "random":
        _no_options(spec, options)
        return RandomEngine(seed=seed)
    if spec in STRENGTHS:
        return _make_search({**STRENGTHS[spec], **options}, spec, seed, tables_dir)
    if spec == "perfect":
        return _make_perfect(tables_dir, seed, options)
    if spec.startswith("hub:"):
        from tournament.engines.hub import HubEngine
        command = shlex.split(spec[len("hub:"):])
        if not command:
            raise ValueError("hub: needs a command, e.g. 'hub:./scan hub'")
        return HubEngine(command, options={k: _option_text(v) for k, v in options.items()})
    if spec.startswith("cb:"):
        return _make_checkerboard(spec[len("cb:"):], options)
    if spec.startswith("cblib:"):
        from tournament.engines.checkerboard import CheckerBoardLibrary
        return CheckerBoardLibrary(spec[len("cblib:"):], options=options)
    if spec.startswith("entrypoint:"):
        return _instantiate(_load_entry_point(spec[len("entrypoint:"):]), spec, seed, tables_dir, options)
    if "=" in spec and ":" not in spec:
        return _make_search({**_parse_search_options(spec), **options}, spec, seed, tables_dir)
    if ":" in spec:
        return _instantiate(load_plugin(spec), spec, seed, tables_dir, options)
    raise ValueError(f"unknown engine {spec!r}; use one of {', '.join(builtin_specs())}, depth=N, time=S, "
                     "package.module:Class, entrypoint:NAME or hub:COMMAND")


_SEARCH_OPTIONS = {"depth", "time", "noise", "tt_bits", "tables", "pv_fill"}


def _make_search(kwargs: dict[str, Any], spec: str, seed: int | None, tables_dir: str | Path | None) -> Engine:
    """The built-in searcher with these keyword arguments (unknown ones raise ValueError); its module,
    numba and the search kernels are imported here, when a searcher is asked for."""
    from tournament.engines.search import SearchEngine
    unknown = sorted(set(kwargs) - _SEARCH_OPTIONS)
    if unknown:
        raise ValueError(f"engine {spec!r}: unknown option {unknown[0]!r} (the searcher takes "
                         f"{', '.join(sorted(_SEARCH_OPTIONS))})")
    return SearchEngine(**kwargs, seed=seed, tables_dir=tables_dir, name=spec)


def _no_options(spec: str, options: dict[str, Any]) -> None:
    if options:
        raise ValueError(f"engine {spec!r} takes no options, got {', '.join(sorted(options))}")


def _option_text(value: Any) -> str:
    """An option value as the Hub protocol spells it."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _parse_search_options(spec: str) -> dict[str, Any]:
    """``depth=8,time=0.5`` -> {"depth": 8, "time": 0.5}."""
    options: dict[str, Any] = {}
    for part in spec.split(","):
        key, _, value = part.partition("=")
        key = key.strip()
        if key not in _SEARCH_KEYS:
            raise ValueError(f"engine {spec!r}: unknown option {key!r} (known: {', '.join(_SEARCH_KEYS)})")
        try:
            options[key] = _SEARCH_KEYS[key](value)
        except ValueError:
            raise ValueError(f"engine {spec!r}: {key} needs a number, got {value!r}") from None
        if key in ("depth", "time") and not options[key] > 0:
            raise ValueError(f"engine {spec!r}: {key} must be positive, got {value!r}")
    return options


def load_plugin(path: str) -> Callable[..., Engine]:
    """The class (or factory) named by ``package.module:Name`` (``Name`` may be dotted).

    >>> load_plugin("tournament.engines.random:RandomEngine").__name__
    'RandomEngine'
    """
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"plug-in {path!r} must look like package.module:Class")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"plug-in {path!r}: cannot import {module_name!r}: {error}") from error
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ValueError(f"plug-in {path!r}: {module_name!r} has no {attribute!r}") from None
    return target


def _load_entry_point(name: str) -> Callable[..., Engine]:
    """The object registered as ``name`` in the engines entry-point group."""
    found = [ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not found:
        known = sorted(ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
        raise ValueError(f"no engine {name!r} in entry-point group {ENTRY_POINT_GROUP!r} "
                         f"(registered: {', '.join(known) or 'none'})")
    return found[0].load()


def _instantiate(factory: Callable[..., Any], spec: str, seed: int | None,
                 tables_dir: str | Path | None, options: dict[str, Any] | None = None) -> Engine:
    """Call a plug-in class or factory with the options its signature accepts (its own options always)."""
    if not callable(factory):
        raise ValueError(f"plug-in {spec!r} is not a class or function")
    offered = {"seed": seed, "tables_dir": tables_dir}
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        parameters = {}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    kwargs = {k: v for k, v in offered.items() if takes_any or k in parameters}
    for name, value in (options or {}).items():
        if not takes_any and name not in parameters:
            raise ValueError(f"plug-in {spec!r} has no option {name!r} (its keyword arguments: "
                             f"{', '.join(p for p in parameters if p not in offered) or 'none'})")
        kwargs[name] = value
    engine = factory(**kwargs)
    if not isinstance(engine, Engine):
        raise ValueError(f"plug-in {spec!r} made a {type(engine).__name__}, not a tournament.engines.base.Engine")
    return engine


def _make_checkerboard(path: str, options: dict[str, Any]) -> Engine:
    """A CheckerBoard library served by its own ``tournament hub-engine cblib:PATH`` process."""
    import sys

    from tournament.engines.hub import HubEngine
    if not path or not Path(path).is_file():
        raise ValueError(f"cb:{path}: no such engine library (give cb:PATH to a .so, or a .dll where it loads)")
    command = [sys.executable, "-m", "tournament.cli", "hub-engine", f"cblib:{Path(path).resolve()}"]
    return HubEngine(command, options={k: _option_text(v) for k, v in options.items()})


def _make_perfect(tables_dir: str | Path | None, seed: int | None, options: dict[str, Any]) -> Engine:
    """The perfect-play table engine (imported here: it loads the prober and h5py), with the engine
    of the option ``fallback`` (a spec) outside the tables.

    >>> import tempfile
    >>> make_engine("perfect", tables_dir=tempfile.mkdtemp(), options={"fallback": "depth=3"}).fallback.depth
    3
    """
    if tables_dir is None:
        raise ValueError("engine 'perfect' needs a tables directory (--tables DIR)")
    unknown = sorted(set(options) - {"fallback"})
    if unknown:
        raise ValueError(f"engine 'perfect': unknown option {unknown[0]!r} (it takes fallback=SPEC)")
    from tournament.engines.perfect import PerfectEngine
    fallback = options.get("fallback")
    return PerfectEngine(tables_dir, fallback=None if fallback is None else
                         make_engine(str(fallback), tables_dir=tables_dir, seed=seed))
