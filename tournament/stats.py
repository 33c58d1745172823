"""Match statistics as engine testers expect them (cutechess / fastchess style).

- Trinomial Elo (wins/losses/draws): Elo from the score fraction, 95% error bars
  from the per-game score variance, LOS, normalised Elo.
- Pentanomial Elo over colour-reversed game pairs (fastchess): the five pair
  outcomes LL, LD, DD/WL, WD, WW and the mean and variance of the pair score.
- SPRT: the GSPRT log-likelihood-ratio approximation, normalised Elo by default.
- Standings: a per-engine table from a list of game results.

All scores are from the first engine's (engine A's) point of view. Pure Python.

Example:
    >>> est = score_elo(30, 20, 50)
    >>> round(est.elo, 1), round(est.error, 1), round(est.los, 3)
    (34.9, 48.5, 0.921)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = [
    "Z95",
    "EloEstimate",
    "Pentanomial",
    "Rating",
    "SprtResult",
    "Standings",
    "StandingsRow",
    "elo_to_score",
    "fit_ratings",
    "los",
    "pentanomial_counts",
    "perfect_score_bound",
    "pentanomial_elo",
    "score_elo",
    "score_to_elo",
    "sprt",
]

Z95 = 1.959963984540054
"""Two-sided 95% quantile of the standard normal distribution."""

_NELO_SCALE = 800.0 / math.log(10.0)
"""nElo per unit of (score - 0.5) / sigma: fastchess's normalised Elo scale."""

_PAIR_SCORES = (0.0, 0.25, 0.5, 0.75, 1.0)
"""Pair score as a fraction of 2 games, for bins LL, LD, DD/WL, WD, WW."""

_REGULARIZE = 1e-3
"""Count used in place of an empty bin in the SPRT, as fastchess does."""


def score_to_elo(score: float) -> float:
    """Logistic Elo difference for an expected score: -400 log10(1/s - 1).

    A score of 1 gives +inf, 0 gives -inf (and beyond [0, 1] too); NaN stays NaN.

    >>> round(score_to_elo(0.6), 2), score_to_elo(0.5), score_to_elo(1.0)
    (70.44, 0.0, inf)
    """
    if math.isnan(score):
        return math.nan
    if score >= 1.0:
        return math.inf
    if score <= 0.0:
        return -math.inf
    return 0.0 - 400.0 * math.log10(1.0 / score - 1.0)  # 0.0 - x avoids -0.0


def elo_to_score(elo: float) -> float:
    """Expected score for a logistic Elo difference (inverse of :func:`score_to_elo`).

    >>> round(elo_to_score(70.44), 4)
    0.6
    """
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def los(wins: int, losses: int) -> float:
    """Likelihood of superiority: 0.5 * (1 + erf((W - L) / sqrt(2 (W + L)))).

    Draws carry no information; with no decisive game the answer is 0.5.

    >>> round(los(20, 10), 4)
    0.9661
    """
    if wins + losses == 0:
        return 0.5
    return 0.5 * (1.0 + math.erf((wins - losses) / math.sqrt(2.0 * (wins + losses))))


@dataclass(frozen=True)
class EloEstimate:
    """An Elo difference with its 95% confidence interval (engine A minus engine B).

    Edge cases: with no games every number is NaN; a perfect score (all wins or
    all losses) gives ``elo`` = +/-inf with NaN error bars (the interval is
    undefined) and a finite one-sided 95% :attr:`bound`; all draws give 0 +/- 0.
    A bound whose score leaves (0, 1) is inf. The numbers keep their mathematical
    values; :meth:`elo_text` and :meth:`error_text` give what to print (never
    "inf" or "nan").
    """

    elo: float
    """Logistic Elo difference from the mean score."""
    error: float
    """Half-width of the 95% interval, (elo_high - elo_low) / 2, as cutechess prints it."""
    elo_low: float
    """Elo at the lower end of the 95% score interval."""
    elo_high: float
    """Elo at the upper end of the 95% score interval."""
    los: float
    """Likelihood of superiority, 0..1."""
    nelo: float
    """Normalised Elo (fastchess): (score - 0.5) / sigma_per_game * 800 / ln 10."""
    nelo_error: float
    """Half-width of the 95% interval of the normalised Elo."""
    score: float
    """Mean score, 0..1."""
    samples: int
    """Number of games (trinomial) or game pairs (pentanomial) behind the estimate."""
    bound: float = math.nan
    """With a perfect score (``elo`` infinite): the one-sided 95% bound on the Elo, a lower bound
    for all wins, an upper bound for all losses (exact binomial: the score 0.05 ** (1 / samples))."""

    @property
    def finite_error(self) -> float | None:
        """The error bar to print: the half-width, or the finite side when one end of the interval
        is unbounded (a small sample near a perfect score); None when neither side is finite."""
        if math.isfinite(self.error):
            return self.error
        if math.isfinite(self.elo) and math.isfinite(self.elo_low):
            return self.elo - self.elo_low
        if math.isfinite(self.elo) and math.isfinite(self.elo_high):
            return self.elo_high - self.elo
        return None

    def elo_text(self, digits: int = 1) -> str:
        """The Elo as testers read it: ``"+34.9"``, ``"> +220.1"`` for a perfect score, ``"-"`` with no games.

        >>> score_elo(12, 0, 0).elo_text(), score_elo(0, 12, 0).elo_text(), score_elo(0, 0, 0).elo_text()
        ('> +218.9', '< -218.9', '-')
        """
        if math.isnan(self.elo):
            return "-"
        if math.isinf(self.elo):
            return f"{'>' if self.elo > 0 else '<'} {self.bound:+.{digits}f}"
        return f"{self.elo:+.{digits}f}"

    def error_text(self, digits: int = 1) -> str:
        """The error bar to print (see :attr:`finite_error`), ``"-"`` when it is undefined.

        >>> score_elo(1, 0, 1).error_text(), score_elo(12, 0, 0).error_text()
        ('258.7', '-')
        """
        error = self.finite_error
        return "-" if error is None else f"{error:.{digits}f}"

    def interval_text(self, digits: int = 1) -> str:
        """The Elo with its error bar, or for a perfect score the bound and what it is.

        >>> score_elo(1, 0, 1).interval_text(), score_elo(4, 0, 0).interval_text()
        ('+190.8 +/- 258.7', '> -18.9 (95% lower bound)')
        >>> score_elo(0, 12, 0).interval_text(), score_elo(0, 0, 0).interval_text()
        ('< -218.9 (95% upper bound)', '-')
        """
        if math.isinf(self.elo):
            side = "lower" if self.elo > 0 else "upper"
            return f"{self.elo_text(digits)} ({PERFECT_SCORE_CONFIDENCE:.0%} {side} bound)"
        if math.isnan(self.elo):
            return "-"
        return f"{self.elo_text(digits)} +/- {self.error_text(digits)}"

    def __str__(self) -> str:
        return self.interval_text(2)


PERFECT_SCORE_CONFIDENCE = 0.95
"""Confidence of the one-sided Elo bound printed for a perfect score."""


def perfect_score_bound(samples: int, *, confidence: float = PERFECT_SCORE_CONFIDENCE) -> float:
    """One-sided Elo lower bound after ``samples`` wins out of ``samples`` (exact binomial).

    The true score p is at least (1 - confidence) ** (1 / samples) with that confidence
    (Clopper-Pearson), and the bound is the Elo of that score. 12 wins of 12 give +218.9.

    >>> round(perfect_score_bound(12), 1), round(perfect_score_bound(100), 1)
    (218.9, 606.8)
    """
    if samples <= 0:
        return math.nan
    return score_to_elo((1.0 - confidence) ** (1.0 / samples))


def _estimate(score: float, variance: float, samples: int, los_value: float, game_var: float) -> EloEstimate:
    """Build an EloEstimate from a mean score, its per-sample variance and per-game variance."""
    if samples == 0:
        return EloEstimate(*(math.nan,) * 8, 0)
    se = math.sqrt(variance / samples)
    low, high = score - Z95 * se, score + Z95 * se
    elo = score_to_elo(score)
    elo_low, elo_high = score_to_elo(low), score_to_elo(high)
    bound = math.nan
    if math.isinf(elo):
        elo_low = elo_high = error = math.nan
        bound = perfect_score_bound(samples) if elo > 0 else -perfect_score_bound(samples)
    else:
        error = (elo_high - elo_low) / 2.0
    sigma = math.sqrt(game_var)
    if sigma > 0:
        nelo = (score - 0.5) / sigma * _NELO_SCALE
        nelo_error = Z95 * se / sigma * _NELO_SCALE
    else:
        nelo = 0.0 if score == 0.5 else math.copysign(math.inf, score - 0.5)
        nelo_error = 0.0 if score == 0.5 else math.nan
    return EloEstimate(elo, error, elo_low, elo_high, los_value, nelo, nelo_error, score, samples, bound)


def score_elo(wins: int, losses: int, draws: int) -> EloEstimate:
    """Trinomial Elo estimate from wins, losses and draws (cutechess method).

    The per-game variance is sum p_i (x_i - s)^2 over the outcomes x = 1, 0.5, 0;
    the 95% interval is the Elo at s +/- 1.96 sqrt(variance / games).

    >>> e = score_elo(10, 10, 10)
    >>> e.elo, e.los
    (0.0, 0.5)
    """
    _check_counts(wins, losses, draws)
    games = wins + losses + draws
    if games == 0:
        return _estimate(math.nan, math.nan, 0, math.nan, math.nan)
    w, d, l = wins / games, draws / games, losses / games
    score = w + 0.5 * d
    variance = w * (1 - score) ** 2 + d * (0.5 - score) ** 2 + l * score**2
    return _estimate(score, variance, games, los(wins, losses), variance)


@dataclass(frozen=True)
class Pentanomial:
    """Counts of colour-reversed game pairs by the pair's score for engine A."""

    ll: int = 0
    """Pairs scored 0 (two losses)."""
    ld: int = 0
    """Pairs scored 0.5 (a loss and a draw)."""
    dd_wl: int = 0
    """Pairs scored 1 (two draws, or a win and a loss)."""
    wd: int = 0
    """Pairs scored 1.5 (a win and a draw)."""
    ww: int = 0
    """Pairs scored 2 (two wins)."""

    @property
    def pairs(self) -> int:
        """Number of pairs."""
        return self.ll + self.ld + self.dd_wl + self.wd + self.ww

    def as_list(self) -> list[int]:
        """Counts in fastchess order ``[LL, LD, DD/WL, WD, WW]``."""
        return [self.ll, self.ld, self.dd_wl, self.wd, self.ww]

    def __str__(self) -> str:
        return "[" + ", ".join(str(c) for c in self.as_list()) + "]"


def pentanomial_counts(pairs: Iterable[tuple[float, float] | float]) -> Pentanomial:
    """Count game pairs into the five pentanomial bins.

    Each pair is either a tuple of engine A's two game scores (each 0, 0.5 or 1)
    or the pair total (0, 0.5, 1, 1.5 or 2).

    >>> pentanomial_counts([(1, 1), (1, 0.5), (0.5, 0.5), (1, 0), 0.5]).as_list()
    [0, 1, 2, 1, 1]
    """
    bins = [0] * 5
    for pair in pairs:
        if isinstance(pair, tuple):
            for game in pair:
                if game not in (0, 0.5, 1):
                    raise ValueError(f"game score must be 0, 0.5 or 1, got {game!r} in pair {pair!r}")
            total = sum(pair)
            if len(pair) != 2:
                raise ValueError(f"a pair has two games, got {pair!r}")
        else:
            total = pair
        index = total * 2
        if index not in (0, 1, 2, 3, 4):
            raise ValueError(f"pair score must be 0, 0.5, 1, 1.5 or 2, got {total!r}")
        bins[int(index)] += 1
    return Pentanomial(*bins)


def _pentanomial_moments(counts: Pentanomial) -> tuple[float, float]:
    """Mean and variance of the pair score (as a fraction of 2 games)."""
    n = counts.pairs
    probs = [c / n for c in counts.as_list()]
    mean = sum(p * x for p, x in zip(probs, _PAIR_SCORES))
    variance = sum(p * (x - mean) ** 2 for p, x in zip(probs, _PAIR_SCORES))
    return mean, variance


def pentanomial_elo(counts: Pentanomial | Sequence[int]) -> EloEstimate:
    """Pentanomial Elo estimate over game pairs (fastchess method).

    The score and variance are taken over pairs; the 95% interval is the Elo at
    s +/- 1.96 sqrt(variance / pairs). The per-game sigma for nElo is
    sqrt(2 * pair variance), and LOS is the normal probability that s > 0.5.
    ``counts`` may be a Pentanomial or a list ``[LL, LD, DD/WL, WD, WW]``.

    >>> e = pentanomial_elo([0, 0, 10, 0, 0])
    >>> e.elo, e.error, e.los
    (0.0, 0.0, 0.5)
    """
    if not isinstance(counts, Pentanomial):
        if len(counts) != 5:
            raise ValueError(f"pentanomial counts need 5 bins [LL, LD, DD/WL, WD, WW], got {counts!r}")
        counts = Pentanomial(*counts)
    _check_counts(*counts.as_list())
    n = counts.pairs
    if n == 0:
        return _estimate(math.nan, math.nan, 0, math.nan, math.nan)
    score, variance = _pentanomial_moments(counts)
    if variance > 0:
        los_value = 0.5 * (1.0 + math.erf((score - 0.5) / math.sqrt(2.0 * variance / n)))
    else:
        los_value = 0.5 if score == 0.5 else float(score > 0.5)
    return _estimate(score, variance, n, los_value, 2.0 * variance)


@dataclass(frozen=True)
class SprtResult:
    """State of a sequential probability ratio test."""

    llr: float
    """Log-likelihood ratio of H1 (elo = elo1) against H0 (elo = elo0)."""
    lower: float
    """Lower bound log(beta / (1 - alpha)): at or below it, accept H0."""
    upper: float
    """Upper bound log((1 - beta) / alpha): at or above it, accept H1."""
    decision: str | None
    """``"H0"``, ``"H1"`` or None while the test must go on."""

    def __str__(self) -> str:
        verdict = self.decision or "continue"
        return f"LLR {self.llr:.2f} ({self.lower:.2f}, {self.upper:.2f}) {verdict}"


def sprt(
    elo0: float,
    elo1: float,
    alpha: float = 0.05,
    beta: float = 0.05,
    *,
    wins: int = 0,
    losses: int = 0,
    draws: int = 0,
    pentanomial: Pentanomial | Sequence[int] | None = None,
    model: str = "normalized",
) -> SprtResult:
    """Run the SPRT for elo0 < elo1 on the results so far.

    Uses the pentanomial counts when given, otherwise the trinomial W/L/D. The LLR
    is the GSPRT approximation (s1 - s0)(2s - s0 - s1) / (2 var / n) used by
    cutechess and earlier fastchess versions, where s is the observed mean score,
    var its per-sample variance and s0, s1 the scores the hypotheses predict.
    Empty bins count as 1e-3 as in fastchess, so a one-sided result still moves
    the LLR. Models:

    - ``"normalized"`` (default, fastchess's default): elo0/elo1 are nElo;
      s_i = 0.5 + nelo_i * sigma / (800 / ln 10), sigma the per-game standard
      deviation (sqrt(2 var) for pairs).
    - ``"logistic"``: elo0/elo1 are logistic Elo; s_i = 1 / (1 + 10^(-elo_i/400)).

    Current fastchess computes the exact multinomial maximum-likelihood LLR; for
    the small Elo differences SPRTs are run with the two agree closely.

    >>> result = sprt(0, 10, 0.05, 0.05, wins=200, losses=20, draws=20)
    >>> result.decision, round(result.upper, 3)
    ('H1', 2.944)
    """
    if not elo0 < elo1:
        raise ValueError(f"SPRT needs elo0 < elo1, got elo0={elo0}, elo1={elo1}")
    if not (0 < alpha < 1 and 0 < beta < 1 and alpha + beta < 1):
        raise ValueError(f"SPRT needs 0 < alpha, beta and alpha + beta < 1, got {alpha}, {beta}")
    if model not in ("normalized", "logistic"):
        raise ValueError(f"unknown SPRT model {model!r}; expected 'normalized' or 'logistic'")
    lower, upper = math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)
    llr = _sprt_llr(elo0, elo1, wins, losses, draws, pentanomial, model)
    decision = "H1" if llr >= upper else "H0" if llr <= lower else None
    return SprtResult(llr, lower, upper, decision)


def _sprt_llr(
    elo0: float,
    elo1: float,
    wins: int,
    losses: int,
    draws: int,
    pentanomial: Pentanomial | Sequence[int] | None,
    model: str,
) -> float:
    """GSPRT LLR approximation over trinomial or pentanomial counts."""
    if pentanomial is not None:
        raw = pentanomial.as_list() if isinstance(pentanomial, Pentanomial) else list(pentanomial)
        if len(raw) != 5:
            raise ValueError(f"pentanomial counts need 5 bins, got {raw!r}")
        outcomes, sigma_factor = _PAIR_SCORES, 2.0
    else:
        raw, outcomes, sigma_factor = [losses, draws, wins], (0.0, 0.5, 1.0), 1.0
    _check_counts(*raw)
    if sum(raw) == 0:
        return 0.0
    counts = [c if c > 0 else _REGULARIZE for c in raw]
    n = sum(counts)
    probs = [c / n for c in counts]
    score = sum(p * x for p, x in zip(probs, outcomes))
    variance = sum(p * (x - score) ** 2 for p, x in zip(probs, outcomes))
    if model == "normalized":
        sigma = math.sqrt(sigma_factor * variance)
        s0, s1 = (0.5 + e * sigma / _NELO_SCALE for e in (elo0, elo1))
    else:
        s0, s1 = elo_to_score(elo0), elo_to_score(elo1)
    return (s1 - s0) * (2 * score - s0 - s1) / (2 * variance / n)


def _check_counts(*counts: int) -> None:
    """Reject negative or non-integer counts."""
    for count in counts:
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"counts must be non-negative integers, got {count!r}")


_RESULT_SCORES = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5, "2-0": 1.0, "0-2": 0.0, "1-1": 0.5}
"""PDN result -> score of the side that moved first (Black), as CheckerBoard writes it."""


@dataclass
class StandingsRow:
    """One engine's line in the standings."""

    engine: str
    """Engine name."""
    wins: int = 0
    """Games won."""
    losses: int = 0
    """Games lost."""
    draws: int = 0
    """Games drawn."""

    @property
    def games(self) -> int:
        """Games played."""
        return self.wins + self.losses + self.draws

    @property
    def score(self) -> float:
        """Points: 1 a win, 1/2 a draw."""
        return self.wins + 0.5 * self.draws

    @property
    def score_percent(self) -> float:
        """Points as a percentage of games (NaN with no games)."""
        return 100.0 * self.score / self.games if self.games else math.nan

    @property
    def elo(self) -> EloEstimate:
        """Elo against the field it met, with error bars and LOS."""
        return score_elo(self.wins, self.losses, self.draws)


@dataclass
class Standings:
    """Per-engine results table built from finished games.

    >>> table = Standings()
    >>> table.add_game("alpha", "beta", "1-0")      # Black (alpha) won
    >>> table.add_game("beta", "alpha", "1/2-1/2")
    >>> [(r.engine, r.score) for r in table.rows()]
    [('alpha', 1.5), ('beta', 0.5)]
    """

    _rows: dict[str, StandingsRow] = field(default_factory=dict)

    @classmethod
    def from_games(cls, games: Iterable[tuple[str, str, str | float]]) -> Standings:
        """Build standings from ``(black, white, result)`` triples (see :meth:`add_game`)."""
        table = cls()
        for black, white, result in games:
            table.add_game(black, white, result)
        return table

    def add_game(self, black: str, white: str, result: str | float) -> None:
        """Record one game between ``black`` (moved first) and ``white``.

        ``result`` is a PDN result (``"1-0"``: Black won, ``"0-1"``, ``"1/2-1/2"``)
        or Black's score as a number (1, 0.5, 0). Unfinished games (``"*"``) are ignored.
        """
        if result == "*":
            return
        if isinstance(result, str):
            if result not in _RESULT_SCORES:
                raise ValueError(f"unknown game result {result!r}; expected 1-0, 0-1, 1/2-1/2 or *")
            score = _RESULT_SCORES[result]
        else:
            score = float(result)
        if score not in (0.0, 0.5, 1.0):
            raise ValueError(f"a game score must be 0, 0.5 or 1, got {result!r}")
        if black == white:
            raise ValueError(f"an engine cannot play itself: {black!r}")
        self._record(black, score)
        self._record(white, 1.0 - score)

    def _record(self, engine: str, score: float) -> None:
        """Add one game scored ``score`` to ``engine``'s row."""
        row = self._rows.setdefault(engine, StandingsRow(engine))
        if score == 1.0:
            row.wins += 1
        elif score == 0.0:
            row.losses += 1
        else:
            row.draws += 1

    def rows(self) -> list[StandingsRow]:
        """Rows by score percentage, then points, then name."""
        return sorted(
            self._rows.values(),
            key=lambda r: (-_nan_to(r.score_percent, -1.0), -r.score, r.engine),
        )

    def format_table(self) -> str:
        """Render the standings as a fixed-width text table.

        >>> print(Standings.from_games([("a", "b", "1-0"), ("b", "a", "1-0")]).format_table())
        Rank  Engine  Games  W  L  D  Score  Score%     Elo    +/-   LOS%
           1  a           2  1  1  0    1.0    50.0    +0.0      -   50.0
           2  b           2  1  1  0    1.0    50.0    +0.0      -   50.0
        """
        rows = self.rows()
        width = max([len("Engine")] + [len(r.engine) for r in rows])
        elo_width = max([6] + [len(r.elo.elo_text()) for r in rows])
        header = (
            f"{'Rank':>4}  {'Engine':<{width}}  {'Games':>5}  {'W':>{_w(rows, 'wins')}}  "
            f"{'L':>{_w(rows, 'losses')}}  {'D':>{_w(rows, 'draws')}}  {'Score':>5}  "
            f"{'Score%':>6}  {'Elo':>{elo_width}}  {'+/-':>5}  {'LOS%':>5}"
        )
        lines = [header]
        for rank, row in enumerate(rows, start=1):
            est = row.elo
            lines.append(
                f"{rank:>4}  {row.engine:<{width}}  {row.games:>5}  {row.wins:>{_w(rows, 'wins')}}  "
                f"{row.losses:>{_w(rows, 'losses')}}  {row.draws:>{_w(rows, 'draws')}}  "
                f"{row.score:>5.1f}  {row.score_percent:>6.1f}  {est.elo_text():>{elo_width}}  "
                f"{est.error_text():>5}  {_percent(est.los):>5}"
            )
        return "\n".join(lines)


def _w(rows: list[StandingsRow], attr: str) -> int:
    """Column width for an integer attribute of the rows (at least 1)."""
    return max([1] + [len(str(getattr(r, attr))) for r in rows])


def _percent(fraction: float) -> str:
    """A fraction as a percentage with one decimal, "-" when undefined."""
    return "-" if math.isnan(fraction) else f"{100 * fraction:.1f}"


def _nan_to(value: float, default: float) -> float:
    """Replace NaN by ``default`` (for sorting)."""
    return default if math.isnan(value) else value


# --- ratings for three or more engines ------------------------------------------------

_ELO_SLOPE = math.log(10.0) / 400.0
"""d(expected score)/d(Elo) = _ELO_SLOPE * p * (1 - p) on the logistic scale."""


@dataclass(frozen=True)
class Rating:
    """One engine's rating from a maximum-likelihood fit over all games."""

    engine: str
    """Engine name."""
    elo: float
    """Rating, relative to the anchor (an engine at 0, or the average at 0)."""
    error: float
    """Half-width of its 95% interval (0 for the anchor engine)."""
    games: int
    """Games it played."""
    score: float
    """Points it scored."""

    def __str__(self) -> str:
        return f"{self.engine} {self.elo:+.1f} +/- {self.error:.1f}"


def fit_ratings(games: Iterable[tuple[str, str, float]], *, anchor: str | None = None,
                prior_draws: float = 0.0, iterations: int = 100) -> list[Rating]:
    """Maximum-likelihood logistic ratings (Ordo / BayesElo style) from ``(a, b, a's score)`` games.

    Each game's expected score is 1 / (1 + 10 ** ((r_b - r_a) / 400)); the fit makes
    every engine's expected points equal its points (Newton's method). Draws count half.
    ``anchor`` fixes that engine at 0 (default: the average is 0). 95% intervals come from
    the inverse Fisher information. An engine with every game won or lost has no finite
    maximum: ``prior_draws`` virtual draws per pairing that met keep it finite (given
    automatically, 1 per pairing, when needed). Returned by rating, best first.

    >>> ratings = fit_ratings([("a", "b", 1), ("a", "b", 1), ("a", "b", 1), ("a", "b", 0)])
    >>> [(r.engine, round(r.elo, 2)) for r in ratings]   # 3/4: 400 log10(3) = 190.85 apart
    [('a', 95.42), ('b', -95.42)]
    """
    import numpy as np

    games = list(games)
    names = sorted({name for a, b, _ in games for name in (a, b)})
    if anchor is not None and anchor not in names:
        raise ValueError(f"anchor {anchor!r} played no game (engines: {', '.join(names)})")
    index = {name: i for i, name in enumerate(names)}
    n = len(names)
    count = np.zeros((n, n))
    points = np.zeros((n, n))
    for a, b, score in games:
        i, j = index[a], index[b]
        count[i, j] += 1
        count[j, i] += 1
        points[i, j] += score
        points[j, i] += 1 - score
    played, scored = count.sum(axis=1), points.sum(axis=1)
    if prior_draws == 0 and np.any((scored == 0) | (scored == played)):
        prior_draws = 1.0
    met = count > 0
    count_fit = count + 2 * prior_draws * met
    points_fit = points + prior_draws * met
    ratings = np.zeros(n)
    for _ in range(iterations):
        expected, weights = _expectations(ratings, count_fit)
        gradient = (points_fit - expected).sum(axis=1)
        hessian = _fisher(weights)
        step = _solve_anchored(hessian, gradient, None if anchor is None else index[anchor]) / _ELO_SLOPE
        ratings += step
        if np.max(np.abs(step)) < 1e-9:
            break
    ratings -= ratings[index[anchor]] if anchor is not None else ratings.mean()
    _, weights = _expectations(ratings, count_fit)
    errors = Z95 * np.sqrt(np.maximum(np.diag(_covariance(_fisher(weights), None if anchor is None
                                                               else index[anchor])), 0.0)) / _ELO_SLOPE
    rows = [Rating(name, float(ratings[i]), float(errors[i]), int(played[i]), float(scored[i]))
            for i, name in enumerate(names)]
    return sorted(rows, key=lambda r: (-r.elo, r.engine))


def _expectations(ratings, count):
    """(expected points of i against j, count * p * (1 - p)) for the current ratings."""
    diff = ratings[:, None] - ratings[None, :]
    p = 1.0 / (1.0 + 10.0 ** (-diff / 400.0))
    return count * p, count * p * (1 - p)


def _fisher(weights):
    """Fisher information (in units of the logistic slope squared): Laplacian of the weights."""
    import numpy as np

    return np.diag(weights.sum(axis=1)) - weights


def _solve_anchored(hessian, gradient, anchor):
    """Newton step with the anchor fixed (or, with None, the minimum-norm step: the average stays)."""
    import numpy as np

    if anchor is None:
        return np.linalg.pinv(hessian) @ gradient
    keep = [i for i in range(len(gradient)) if i != anchor]
    step = np.zeros(len(gradient))
    step[keep] = np.linalg.solve(hessian[np.ix_(keep, keep)], gradient[keep])
    return step


def _covariance(hessian, anchor):
    """Covariance of the ratings: pseudo-inverse (average fixed) or inverse without the anchor."""
    import numpy as np

    if anchor is None:
        return np.linalg.pinv(hessian)
    keep = [i for i in range(len(hessian)) if i != anchor]
    cov = np.zeros_like(hessian)
    cov[np.ix_(keep, keep)] = np.linalg.inv(hessian[np.ix_(keep, keep)])
    return cov
