"""Per-engine settings of a tournament: ``--engine "name=fast spec=hard tc=10+0.1 option.noise=20"``.

An engine is given either as a bare spec (``easy``, ``depth=3``, ``hub:./scan hub``;
see :mod:`tournament.engines.registry`) or as ``key=value`` settings, as
cutechess-cli and fastchess take them:

- ``spec=SPEC``: what builds the engine (required in this form);
- ``name=NAME``: its label in standings and records (default: the spec);
- ``tc=TC``: its own time control (``0.1`` seconds a move, ``60+0.5`` base plus
  increment, ``40/120`` 40 moves in 120 s, repeating; ``40/120+1`` too);
- ``depth=N``, ``nodes=N``: a depth or node cap on each move;
- ``option.NAME=VALUE``: an engine option (a Hub ``set-param``, a plug-in class's
  keyword argument, a built-in searcher's keyword such as ``noise``);
- ``tables=DIR``: its own endgame table directory.

``--each`` gives settings every engine starts from. Unknown keys and bad values
raise :class:`~tournament.engines.base.EngineSetupError` (a ValueError) at once.

>>> config = parse_engine("name=fast spec=hard tc=10+0.1 option.noise=20")
>>> config.label, config.spec, config.limit(Limit(time=1.0)), config.options
('fast', 'hard', Limit(time=None, clock=10.0, increment=0.1, depth=None, nodes=None, moves=None), (('noise', '20'),))
>>> parse_engine("depth=3").spec  # a bare spec, as before
'depth=3'
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace
from typing import Any

from tournament.engines.base import EngineSetupError, Limit

__all__ = ["EngineConfig", "SETTING_KEYS", "option_value", "parse_engine", "parse_settings", "parse_time_control"]

SETTING_KEYS = ("name", "spec", "tc", "depth", "nodes", "tables")
"""Keys of the settings form (besides ``option.NAME``)."""

_OPTION_PREFIX = "option."


def parse_time_control(text: str) -> Limit:
    """A Limit from a time control: ``0.1`` a move, ``60+0.5`` base+increment, ``40/120[+INC]`` per 40 moves.

    >>> parse_time_control("0.25").time, parse_time_control("60+0.5").clock, parse_time_control("40/120").moves
    (0.25, 60.0, 40)
    >>> parse_time_control("fast")
    Traceback (most recent call last):
    ...
    ValueError: time control 'fast': expected SECONDS a move, BASE+INC or MOVES/BASE[+INC]
    """
    try:
        moves = None
        body = text.strip()
        if "/" in body:
            count, body = body.split("/", 1)
            moves = int(count)
            if moves < 1:
                raise ValueError
        if "+" in body or moves is not None:
            base, _, increment = body.partition("+")
            limit = Limit(clock=float(base), increment=float(increment or 0), moves=moves)
            if limit.clock <= 0 or limit.increment < 0:
                raise ValueError
            return limit
        seconds = float(body)
        if seconds <= 0:
            raise ValueError
        return Limit(time=seconds)
    except ValueError:
        raise ValueError(f"time control {text!r}: expected SECONDS a move, BASE+INC or MOVES/BASE[+INC]") from None


@dataclass(frozen=True)
class EngineConfig:
    """One participant's settings: what to build, its name, limits, options and tables."""

    spec: str
    """Engine spec for :func:`tournament.engines.registry.make_engine`."""
    name: str | None = None
    """Label in standings and records (None: from the spec)."""
    tc: str | None = None
    """Its own time control, as given (see :func:`parse_time_control`); None: the run's."""
    depth: int | None = None
    """Depth cap on each move."""
    nodes: int | None = None
    """Node cap on each move."""
    options: tuple[tuple[str, str], ...] = ()
    """``option.NAME=VALUE`` settings, in the order given."""
    tables: str | None = None
    """Its own table directory (None: the run's ``--tables``)."""

    @property
    def label(self) -> str:
        """The name, else the spec."""
        return self.name or self.spec

    @property
    def is_bare(self) -> bool:
        """Whether nothing but the spec is set (then settings.json stores the spec alone)."""
        return self == EngineConfig(self.spec)

    def limit(self, default: Limit) -> Limit:
        """This engine's Limit: its ``tc`` (else ``default``) with its depth and node caps."""
        limit = parse_time_control(self.tc) if self.tc else default
        if self.depth is not None:
            limit = replace(limit, depth=self.depth)
        if self.nodes is not None:
            limit = replace(limit, nodes=self.nodes)
        return limit

    def option_kwargs(self) -> dict[str, Any]:
        """The options as keyword arguments, numbers and booleans converted (see :func:`option_value`)."""
        return {name: option_value(value) for name, value in self.options}

    def to_json(self) -> str | dict[str, Any]:
        """The spec alone when nothing else is set, else a dict of the set fields."""
        if self.is_bare:
            return self.spec
        data = {key: getattr(self, key) for key in SETTING_KEYS if getattr(self, key) is not None}
        if self.options:
            data["options"] = dict(self.options)
        return data

    @classmethod
    def from_json(cls, data: str | dict[str, Any]) -> "EngineConfig":
        """The settings :meth:`to_json` wrote.

        >>> config = EngineConfig("hard", name="h", options=(("noise", "20"),))
        >>> EngineConfig.from_json(config.to_json()) == config, EngineConfig.from_json("easy")
        (True, EngineConfig(spec='easy', name=None, tc=None, depth=None, nodes=None, options=(), tables=None))
        """
        if isinstance(data, str):
            return cls(data)
        unknown = sorted(set(data) - set(SETTING_KEYS) - {"options"})
        if unknown or "spec" not in data:
            raise EngineSetupError(f"engine settings {data!r}: need spec, and only {', '.join(SETTING_KEYS)}, options")
        return cls(**{key: data[key] for key in SETTING_KEYS if key in data},
                   options=tuple((str(k), str(v)) for k, v in data.get("options", {}).items()))


def option_value(text: str) -> Any:
    """An option value as Python: int, float, bool (true/false/yes/no/on/off) or the string.

    >>> option_value("64"), option_value("0.5"), option_value("true"), option_value("book.txt")
    (64, 0.5, True, 'book.txt')
    """
    lowered = text.lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_settings(text: str) -> dict[str, Any]:
    """``key=value`` settings (shell quoting allowed) as a dict; options under ``"options"``.

    >>> parse_settings('spec="hub:./engine --fast" option.Hash=64 depth=5')
    {'spec': 'hub:./engine --fast', 'options': {'Hash': '64'}, 'depth': 5}
    """
    try:
        tokens = shlex.split(text)
    except ValueError as exc:
        raise EngineSetupError(f"engine settings {text!r}: {exc}") from None
    settings: dict[str, Any] = {}
    for token in tokens:
        key, equals, value = token.partition("=")
        if not equals:
            raise EngineSetupError(f"engine settings {text!r}: {token!r} is not KEY=VALUE")
        if key.startswith(_OPTION_PREFIX) and len(key) > len(_OPTION_PREFIX):
            settings.setdefault("options", {})[key[len(_OPTION_PREFIX):]] = value
        elif key in SETTING_KEYS:
            settings[key] = _checked(key, value, text)
        else:
            raise EngineSetupError(f"engine settings {text!r}: unknown key {key!r} "
                                   f"(known: {', '.join(SETTING_KEYS)}, option.NAME)")
    return settings


def _checked(key: str, value: str, text: str) -> Any:
    """A setting's value, checked: positive integers for depth and nodes, a valid tc, non-empty text."""
    if key in ("depth", "nodes"):
        try:
            number = int(value)
        except ValueError:
            number = 0
        if number < 1:
            raise EngineSetupError(f"engine settings {text!r}: {key} needs a positive integer, got {value!r}")
        return number
    if key == "tc":
        try:
            parse_time_control(value)
        except ValueError as exc:
            raise EngineSetupError(f"engine settings {text!r}: {exc}") from None
    if not value:
        raise EngineSetupError(f"engine settings {text!r}: {key} needs a value")
    return value


def _is_settings_form(text: str) -> bool:
    """Whether ``text`` is ``key=value`` settings rather than a bare spec."""
    if text.strip().startswith(("hub:", "cb:")):
        return False
    try:
        tokens = shlex.split(text)
    except ValueError:  # unbalanced quotes: settings if it starts like them (parse_settings says what is wrong)
        return text.split("=", 1)[0].strip() in SETTING_KEYS
    keys = {token.partition("=")[0] for token in tokens}
    return "spec" in keys or any(k in ("name", "tc", "nodes", "tables") or k.startswith(_OPTION_PREFIX)
                                 for k in keys)


def parse_engine(text: str, *, each: str | dict[str, Any] | None = None) -> EngineConfig:
    """An EngineConfig from an ``--engine`` value, on top of the ``--each`` defaults.

    >>> parse_engine("spec=easy", each="tc=40/60 option.noise=10")
    EngineConfig(spec='easy', name=None, tc='40/60', depth=None, nodes=None, options=(('noise', '10'),), tables=None)
    >>> parse_engine("name=x")
    Traceback (most recent call last):
    ...
    tournament.engines.base.EngineSetupError: engine settings 'name=x': spec= is missing (what engine to run)
    """
    defaults = parse_settings(each) if isinstance(each, str) else dict(each or {})
    if _is_settings_form(text):
        given = parse_settings(text)
    else:
        given = {"spec": text.strip()}
    options = {**defaults.get("options", {}), **given.get("options", {})}
    merged = {**defaults, **given, "options": tuple(options.items())}
    if not merged.get("spec"):
        raise EngineSetupError(f"engine settings {text!r}: spec= is missing (what engine to run)")
    return EngineConfig(**merged)
