"""Tests for tournament.stats: Elo, LOS, pentanomial and SPRT against fastchess's and cutechess's
published figures, and hand-computed cases."""

import math

import pytest

from tournament.stats import (
    Z95,
    Pentanomial,
    Standings,
    elo_to_score,
    fit_ratings,
    los,
    pentanomial_counts,
    pentanomial_elo,
    perfect_score_bound,
    score_elo,
    score_to_elo,
    sprt,
)


def elo(s: float) -> float:
    return -400 * math.log10(1 / s - 1)


def test_equal_results_give_zero_elo_and_even_los():
    est = score_elo(10, 10, 10)
    assert est.elo == 0.0
    assert est.los == 0.5
    assert est.score == 0.5
    assert est.samples == 30


def test_sixty_percent_is_70_44_elo():
    assert score_to_elo(0.6) == pytest.approx(70.44, abs=0.005)
    assert score_elo(6, 4, 0).elo == pytest.approx(70.44, abs=0.005)
    assert score_elo(3, 1, 6).elo == pytest.approx(70.44, abs=0.005)  # (3 + 6/2) / 10 = 0.6
    assert elo_to_score(score_to_elo(0.6)) == pytest.approx(0.6)


def test_score_elo_checks_its_own_score():
    assert score_elo(2, 0, 6).score == pytest.approx(0.625)


def test_error_bars_by_hand():
    # W=L=D=10: per-game variance = (1/3)(1/4) + 0 + (1/3)(1/4) = 1/6.
    se = math.sqrt((1 / 6) / 30)
    est = score_elo(10, 10, 10)
    assert est.elo_high == pytest.approx(elo(0.5 + Z95 * se))
    assert est.elo_low == pytest.approx(elo(0.5 - Z95 * se))
    assert est.error == pytest.approx((elo(0.5 + Z95 * se) - elo(0.5 - Z95 * se)) / 2)
    assert est.error == pytest.approx(104.6, abs=0.05)


def test_asymmetric_interval_by_hand():
    # W=30 L=20 D=50: s=0.55, variance = .3*.45^2 + .5*.05^2 + .2*.55^2 = 0.1225.
    est = score_elo(30, 20, 50)
    se = math.sqrt(0.1225 / 100)
    assert est.elo_low == pytest.approx(elo(0.55 - Z95 * se))
    assert est.elo_high == pytest.approx(elo(0.55 + Z95 * se))
    assert est.elo_high - est.elo > est.elo - est.elo_low


def test_los_for_20_wins_10_losses():
    expected = 0.5 * (1 + math.erf((20 - 10) / math.sqrt(2 * 30)))
    assert los(20, 10) == pytest.approx(expected)
    assert score_elo(20, 10, 7).los == pytest.approx(expected)
    assert los(20, 10) == pytest.approx(0.9661, abs=1e-4)


def test_no_games_is_nan():
    est = score_elo(0, 0, 0)
    assert math.isnan(est.elo) and math.isnan(est.error) and math.isnan(est.los)
    assert est.samples == 0


def test_all_wins_is_infinite_with_undefined_error():
    est = score_elo(12, 0, 0)
    assert est.elo == math.inf
    assert math.isnan(est.error)
    assert est.los > 0.999
    assert score_elo(0, 5, 0).elo == -math.inf


def test_all_draws_is_zero_plus_minus_zero():
    est = score_elo(0, 0, 8)
    assert est.elo == 0.0 and est.error == 0.0 and est.los == 0.5


def test_negative_counts_rejected():
    with pytest.raises(ValueError):
        score_elo(-1, 0, 0)


def test_pentanomial_counts_from_pairs():
    pairs = [(1, 1), (1, 0.5), (0.5, 0.5), (1, 0), (0, 1), (0, 0.5), (0, 0), (0.5, 1), 2, 0.5]
    counts = pentanomial_counts(pairs)
    assert counts == Pentanomial(ll=1, ld=2, dd_wl=3, wd=2, ww=2)
    assert counts.as_list() == [1, 2, 3, 2, 2]
    assert counts.pairs == 10


@pytest.mark.parametrize("bad", [(1, 2), (0.25, 0), 3, 0.75, (1,)])
def test_pentanomial_counts_rejects_bad_scores(bad):
    with pytest.raises(ValueError):
        pentanomial_counts([bad])


def test_pentanomial_elo_edge_cases():
    assert math.isnan(pentanomial_elo([0, 0, 0, 0, 0]).elo)
    assert pentanomial_elo([0, 0, 0, 0, 4]).elo == math.inf
    assert pentanomial_elo(Pentanomial(dd_wl=6)).elo == 0.0


def test_sprt_bounds_for_five_percent():
    result = sprt(0, 5, 0.05, 0.05, wins=10, losses=10, draws=10)
    assert result.lower == pytest.approx(-2.944, abs=1e-3)
    assert result.upper == pytest.approx(2.944, abs=1e-3)
    assert result.lower == pytest.approx(math.log(0.05 / 0.95))


def test_sprt_overwhelming_wins_accepts_h1():
    assert sprt(0, 5, wins=300, losses=10, draws=50).decision == "H1"
    assert sprt(0, 5, wins=100, losses=0, draws=0).decision == "H1"
    assert sprt(0, 5, pentanomial=[0, 0, 5, 20, 100]).decision == "H1"
    assert sprt(0, 5, wins=300, losses=10, draws=50, model="logistic").decision == "H1"


def test_sprt_overwhelming_losses_accepts_h0():
    assert sprt(0, 5, wins=10, losses=300, draws=50).decision == "H0"
    assert sprt(0, 5, pentanomial=[100, 20, 5, 0, 0]).decision == "H0"


def test_sprt_undecided_and_empty():
    assert sprt(0, 5, wins=12, losses=10, draws=30).decision is None
    assert sprt(0, 5).llr == 0.0


# --- against published figures ----------------------------------------------------------
#
# fastchess's own unit tests (github.com/Disservin/fastchess, app/tests/elo_test.cpp and
# app/tests/sprt_test.cpp) give nElo, Elo, errors, LOS and SPRT log-likelihood ratios for fixed
# counts, to 2 decimals. Its pentanomial Stats(ll, ld, wl, dd, wd, ww) keeps WL and DD apart; ours
# counts them together. cutechess-cli's match lines ("Score of A vs B: W - L - D ... Elo
# difference: e +/- m, LOS: p %") and fastchess's ("Elo: ... nElo: ... LOS: ... Ptnml(0-2): [...]
# LLR: ...") are quoted from published runs, to their printed precision.

#: Half the last printed digit of fastchess's two decimals.
TWO_DECIMALS = 0.005


def fastchess_pentanomial(ll: int, ld: int, wl: int, dd: int, wd: int, ww: int) -> list[int]:
    """Our five pair counts from fastchess's six (a win and a loss is a pair score of one, as two draws)."""
    return [ll, ld, wl + dd, wd, ww]


@pytest.mark.parametrize("wins, losses, draws, nelo, nelo_error", [
    (76, 89, 123, -20.76, 40.13),   # fastchess elo_test.cpp "EloWDL 1"
    (136, 96, 111, 49.77, 36.77),   # "EloWDL 2"
    (34, 356, 0, -508.44, 34.48),   # "EloWDL 3"
])
def test_trinomial_nelo_is_fastchess(wins, losses, draws, nelo, nelo_error):
    est = score_elo(wins, losses, draws)
    assert est.nelo == pytest.approx(nelo, abs=TWO_DECIMALS)
    assert est.nelo_error == pytest.approx(nelo_error, abs=TWO_DECIMALS)


def test_trinomial_elo_and_error_are_fastchess():
    est = score_elo(136, 96, 111)  # fastchess elo_test.cpp "EloWDL 2": diff 40.70, error 30.43
    assert (est.elo, est.error) == pytest.approx((40.70, 30.43), abs=TWO_DECIMALS)


@pytest.mark.parametrize("wins, losses, draws, elo, error, los_percent", [
    (1571, 1448, 1981, 8.5, 7.5, 98.7),  # ijccrl.com/sprt-test-200825-wordfish-dev-vs-base (cutechess-cli)
    (3225, 3068, 3707, 5.5, 5.4, 97.6),  # ijccrl.com/?p=5831 (cutechess-cli)
])
def test_trinomial_elo_error_and_los_are_cutechess(wins, losses, draws, elo, error, los_percent):
    est = score_elo(wins, losses, draws)
    assert (est.elo, est.error, 100 * est.los) == pytest.approx((elo, error, los_percent), abs=0.05)


@pytest.mark.parametrize("counts, nelo, nelo_error, elo, error", [
    ((34, 54, 31, 32, 64, 75), 57.94, 28.28, 55.58, 27.65),        # fastchess "EloPentanomial 1"
    ((332, 433, 457, 41, 333, 334), -9.17, 10.96, -8.64, 10.33),   # "EloPentanomial 2"
    ((7895, 8757, 5485, 200, 568, 9999), -19.01, 2.65, -21.04, 2.95),  # "EloPentanomial 3"
])
def test_pentanomial_elo_and_nelo_are_fastchess(counts, nelo, nelo_error, elo, error):
    est = pentanomial_elo(fastchess_pentanomial(*counts))
    assert (est.nelo, est.nelo_error) == pytest.approx((nelo, nelo_error), abs=TWO_DECIMALS)
    assert (est.elo, est.error) == pytest.approx((elo, error), abs=TWO_DECIMALS)


def test_pentanomial_los_is_fastchess():
    # fastchess elo_test.cpp: "EloPentanomial 1" LOS "100.00 %", "EloPentanomial 2" "5.05 %"
    first = pentanomial_elo(fastchess_pentanomial(34, 54, 31, 32, 64, 75))
    second = pentanomial_elo(fastchess_pentanomial(332, 433, 457, 41, 333, 334))
    assert (100 * first.los, 100 * second.los) == pytest.approx((100.0, 5.05), abs=TWO_DECIMALS)


@pytest.mark.parametrize("ptnml, elo1, elo, error, nelo, nelo_error, los_percent, llr", [
    # ijccrl.com/2-fastchess-test-sprt-wordfish-base-vs-wordfish-dev: 2000 games, SPRT [0.00, 2.50]
    ([5, 109, 748, 134, 4], 2.5, 4.00, 5.68, 10.71, 15.23, 91.59, 0.39),
    # ijccrl.com/sprt-test-of-revolution-1-0-1-dev-vs-revolution-1-0: 628 games, SPRT [0.00, 2.00]
    ([3, 75, 149, 83, 4], 2.0, 5.53, 14.79, 10.17, 27.17, 76.85, 0.10),
])
def test_a_published_fastchess_match_line(ptnml, elo1, elo, error, nelo, nelo_error, los_percent, llr):
    est = pentanomial_elo(ptnml)
    assert (est.elo, est.error, est.nelo, est.nelo_error, 100 * est.los) == pytest.approx(
        (elo, error, nelo, nelo_error, los_percent), abs=TWO_DECIMALS)
    assert sprt(0, elo1, pentanomial=ptnml).llr == pytest.approx(llr, abs=TWO_DECIMALS)


@pytest.mark.parametrize("wins, losses, draws, elo0, elo1, model, llr", [
    (36433, 36027, 68692, 0, 2, "normalized", 0.92),      # fastchess sprt_test.cpp "normalized trinomial 1"
    (10871, 10650, 20431, -1.75, 0.25, "normalized", 2.30),  # "normalized trinomial 2"
    (21404, 21184, 40708, 0.5, 2.5, "logistic", -1.57),    # "logistic trinomial 1"
    (57433, 57030, 106593, 0, 2, "logistic", -2.59),       # "logistic trinomial 2"
    (4307, 4063, 8620, 0, 3, "logistic", 2.99),  # github.com/jw1912/SPRT README, its GSPRT example
])
def test_trinomial_sprt_llr_is_fastchess(wins, losses, draws, elo0, elo1, model, llr):
    assert sprt(elo0, elo1, wins=wins, losses=losses, draws=draws, model=model).llr == pytest.approx(
        llr, abs=TWO_DECIMALS)


@pytest.mark.parametrize("counts, elo0, elo1, model, llr", [
    ((365, 16618, 36029, 200, 16974, 390), 0, 2, "normalized", 2.25),      # "normalized pentanomial 1"
    ((127, 4883, 10311, 401, 5150, 104), -1.75, 0.25, "normalized", 3.01),  # "normalized pentanomial 2"
    ((223, 9863, 20279, 1000, 10037, 246), 0.5, 2.5, "logistic", -3.07),    # "logistic pentanomial 1"
    ((871, 26175, 55003, 980, 26678, 821), 0, 2, "logistic", -4.98),        # "logistic pentanomial 2"
])
def test_pentanomial_sprt_llr_is_fastchess(counts, elo0, elo1, model, llr):
    result = sprt(elo0, elo1, pentanomial=fastchess_pentanomial(*counts), model=model)
    assert result.llr == pytest.approx(llr, abs=TWO_DECIMALS)


@pytest.mark.parametrize(
    "args", [dict(elo0=5, elo1=0), dict(elo0=0, elo1=5, alpha=0), dict(elo0=0, elo1=5, model="bayes")]
)
def test_sprt_rejects_bad_settings(args):
    with pytest.raises(ValueError):
        sprt(**args)


def test_standings_rows():
    games = [
        ("alpha", "beta", "1-0"),
        ("beta", "alpha", "1/2-1/2"),
        ("alpha", "gamma", 1),
        ("gamma", "beta", "0-1"),
        ("gamma", "alpha", "*"),
    ]
    rows = Standings.from_games(games).rows()
    assert [r.engine for r in rows] == ["alpha", "beta", "gamma"]
    alpha, beta, gamma = rows
    assert (alpha.games, alpha.wins, alpha.losses, alpha.draws) == (3, 2, 0, 1)
    assert alpha.score == 2.5 and alpha.score_percent == pytest.approx(250 / 3)
    assert (beta.wins, beta.losses, beta.draws) == (1, 1, 1)
    assert beta.elo.elo == 0.0 and beta.elo.los == 0.5
    assert gamma.score == 0.0 and gamma.elo.elo == -math.inf


def test_standings_rejects_bad_results():
    table = Standings()
    with pytest.raises(ValueError):
        table.add_game("a", "b", "2-1")
    with pytest.raises(ValueError):
        table.add_game("a", "a", "1-0")


def test_standings_table_text():
    text = Standings.from_games([("a", "bee", "1-0"), ("bee", "a", "1/2-1/2")] * 5).format_table()
    lines = text.splitlines()
    assert lines[0].split() == ["Rank", "Engine", "Games", "W", "L", "D", "Score", "Score%", "Elo", "+/-", "LOS%"]
    assert lines[1].split()[:8] == ["1", "a", "10", "5", "0", "5", "7.5", "75.0"]
    assert lines[2].split()[:2] == ["2", "bee"]


def test_perfect_score_prints_the_one_sided_bound():
    # 12 wins of 12: the score is at least 0.05 ** (1/12) = 0.77908 with 95% confidence,
    # which is -400 log10(1/0.77908 - 1) = +218.9 Elo
    est = score_elo(12, 0, 0)
    assert est.bound == pytest.approx(-400 * math.log10(1 / 0.05 ** (1 / 12) - 1))
    assert est.elo_text() == "> +218.9" and est.error_text() == "-"
    assert score_elo(0, 12, 0).elo_text() == "< -218.9"
    assert str(est) == "> +218.94 (95% lower bound)"
    assert str(score_elo(0, 12, 0)) == "< -218.94 (95% upper bound)"
    assert perfect_score_bound(1) == pytest.approx(score_to_elo(0.05))


def test_standings_of_a_whitewash_have_no_inf_or_nan():
    text = Standings.from_games([("a", "b", "1-0"), ("b", "a", "0-1")] * 6).format_table()
    assert "inf" not in text and "nan" not in text
    assert text.splitlines()[1].split()[8:10] == [">", "+218.9"]


def test_one_sided_error_when_the_interval_leaves_the_scale():
    est = score_elo(1, 0, 1)  # the upper end of the score interval is above 1
    assert math.isinf(est.elo_high) and est.finite_error == pytest.approx(est.elo - est.elo_low)


# --- maximum-likelihood ratings (hand-computed cases) ----------------------------------

_SD_PER_GAME = 400 / math.log(10)  # 1 / (d expected score / d Elo) at p (1 - p) = 1


def test_two_engines_fit_is_the_score_formula():
    # 3 of 4: the expected score 0.75 puts them 400 log10(3) apart; Fisher information 4 * 0.75 * 0.25
    ratings = {r.engine: r for r in fit_ratings([("a", "b", 1)] * 3 + [("b", "a", 1)])}
    assert ratings["a"].elo - ratings["b"].elo == pytest.approx(400 * math.log10(3))
    assert ratings["a"].elo == pytest.approx(-ratings["b"].elo)  # the average is 0
    sd_difference = _SD_PER_GAME / math.sqrt(4 * 0.75 * 0.25)
    assert ratings["a"].error == pytest.approx(Z95 * sd_difference / 2)
    assert ratings["a"].score == 3 and ratings["b"].games == 4


def test_a_chain_adds_up_and_its_errors_add_in_quadrature():
    games = [("a", "b", 1)] * 3 + [("a", "b", 0)] + [("b", "c", 1)] * 3 + [("b", "c", 0)]
    ratings = {r.engine: r for r in fit_ratings(games, anchor="c")}
    link = 400 * math.log10(3)
    assert (ratings["b"].elo, ratings["a"].elo, ratings["c"].elo) == pytest.approx((link, 2 * link, 0.0))
    link_error = Z95 * _SD_PER_GAME / math.sqrt(4 * 0.75 * 0.25)
    assert ratings["b"].error == pytest.approx(link_error)
    assert ratings["a"].error == pytest.approx(link_error * math.sqrt(2))
    assert ratings["c"].error == 0


def test_equal_results_give_equal_ratings_and_draws_count_half():
    games = [("a", "b", 0.5), ("b", "c", 0.5), ("c", "a", 0.5), ("a", "b", 1), ("b", "a", 1)]
    assert all(abs(r.elo) < 1e-6 for r in fit_ratings(games))


def test_a_perfect_score_gets_one_virtual_draw_per_pairing():
    # 4-0 plus one virtual draw: 5 of 6, so 400 log10(5) apart
    ratings = {r.engine: r for r in fit_ratings([("a", "b", 1)] * 4 + [("b", "c", 0.5)] * 2)}
    assert ratings["a"].elo - ratings["b"].elo == pytest.approx(400 * math.log10(5))
    assert all(math.isfinite(r.elo) and math.isfinite(r.error) for r in ratings.values())
    with pytest.raises(ValueError, match="anchor 'z'"):
        fit_ratings([("a", "b", 1)], anchor="z")


def test_a_short_perfect_run_gives_a_weak_bound_of_the_right_side():
    # 2 wins of 2: p >= 0.05 ** 0.5 = 0.2236, so only Elo > -216.2 is known with 95% confidence
    assert score_elo(2, 0, 0).elo_text() == "> -216.2" and score_elo(0, 2, 0).elo_text() == "< +216.2"
