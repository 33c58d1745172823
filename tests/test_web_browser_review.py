"""The page's move list, replay, review, typed moves, focus, copy buttons and the explorer's line,
in headless Chromium (the fixtures and helpers of test_web_browser)."""

from __future__ import annotations

import urllib.parse

import pytest

pytest.importorskip("starlette", reason="the web extras are missing: pip install -e '.[web]'")
pytest.importorskip("selenium", reason="selenium is missing: pip install -e '.[test]'")

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

from egtb.rules.board import Board  # noqa: E402
from test_web_browser import (  # noqa: E402,F401  (fixtures used by name)
    WON_FEN, artifacts, classes, driver, no_script_errors, pytestmark, screenshot, tables, text, url, wait_fen,
    wait_for,
)

OPENING = ["11-15", "23-19", "8-11", "22-17"]


def fen_after(moves: list[str], fen: str | None = None) -> str:
    board = Board(fen)
    for move in moves:
        board.push_pdn(move)
    return board.fen()


def line(driver) -> list[tuple[str, set[str]]]:
    """The move list's moves with their classes."""
    return [(t, set(c.split())) for t, c in driver.execute_script(
        "return [...document.querySelectorAll('#move-list .move')].filter((e) => e.dataset.ply)"
        ".map((e) => [e.textContent, e.className]);")]


def type_keys(driver, keys: str) -> None:
    ActionChains(driver).send_keys(keys).perform()


def url_params(driver) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(driver.current_url).query))


def test_the_move_list_steps_through_the_game_and_a_typed_move_starts_a_new_line(driver, url):
    driver.get(f"{url}?view=play&opponent=hotseat&moves={'+'.join(OPENING)}")
    wait_fen(driver, fen_after(OPENING))
    driver.find_element(By.CSS_SELECTOR, "#move-list .move[data-ply='2']").click()
    wait_fen(driver, fen_after(OPENING[:2]))
    assert [t for t, _ in line(driver)] == OPENING  # the moves after it are kept, shown ahead
    assert [("future" in c, "current" in c) for _, c in line(driver)] == [
        (False, False), (False, True), (True, False), (True, False)]
    assert url_params(driver)["at"] == "2" and url_params(driver)["moves"] == " ".join(OPENING)
    assert not driver.find_element(By.ID, "browsing").get_attribute("hidden")
    type_keys(driver, "9-13")
    assert text(driver, "move-entry-text") == "9-13"
    type_keys(driver, Keys.ENTER)
    wait_fen(driver, fen_after(OPENING[:2] + ["9-13"]))
    assert [t for t, _ in line(driver)] == OPENING[:2] + ["9-13"]  # the old line after move 2 is gone
    assert "at" not in url_params(driver)
    type_keys(driver, "1-2" + Keys.ENTER)  # not a move: said, nothing played
    wait_for(driver, lambda: text(driver, "status") == "1-2 is not a legal move here")
    assert [t for t, _ in line(driver)] == OPENING[:2] + ["9-13"]


def test_a_link_with_a_shown_move_opens_there(driver, url):
    driver.get(f"{url}?view=play&opponent=hotseat&moves={'+'.join(OPENING)}&at=1")
    wait_fen(driver, fen_after(OPENING[:1]))
    type_keys(driver, Keys.END)
    wait_fen(driver, fen_after(OPENING))
    type_keys(driver, Keys.HOME)
    wait_fen(driver, fen_after([]))


def test_a_pasted_game_replays_and_the_review_marks_the_thrown_win(driver, url, artifacts):
    driver.get(f"{url}?view=play&opponent=hotseat")
    wait_for(driver, lambda: text(driver, "status") == "Black to move")
    driver.find_element(By.CSS_SELECTOR, "#replay-box summary").click()
    pdn = f'[Event "club"]\n[FEN "{WON_FEN}"]\n[SetUp "1"]\n1... 10-6 1x10x17 *\n'
    driver.find_element(By.ID, "paste-pdn").send_keys(pdn)
    driver.find_element(By.ID, "paste-replay").click()
    wait_fen(driver, WON_FEN)  # shown at its start, the moves ahead
    assert [t for t, _ in line(driver)] == ["10-6", "1x10x17"]
    driver.find_element(By.ID, "review").click()
    wait_for(driver, lambda: "mistake" in line(driver)[0][1])
    assert "mistake" not in line(driver)[1][1]
    review = text(driver, "review-text")
    assert "entered the tables at its start, where White wins" in review
    assert "1... 10-6 (White) threw away a win: win → loss, best 14-9" in review
    screenshot(driver, artifacts, "play-review")
    type_keys(driver, Keys.ARROW_RIGHT)
    wait_fen(driver, fen_after(["10-6"], WON_FEN))
    type_keys(driver, Keys.HOME)
    wait_fen(driver, WON_FEN)
    type_keys(driver, "14-9" + Keys.ENTER)  # from the start: a new line; the old one's review goes
    wait_fen(driver, fen_after(["14-9"], WON_FEN))
    assert driver.find_element(By.ID, "review-text").get_attribute("hidden")


def test_a_bad_paste_is_named(driver, url):
    driver.get(f"{url}?view=play&opponent=hotseat")
    wait_for(driver, lambda: text(driver, "status") == "Black to move")
    driver.find_element(By.CSS_SELECTOR, "#replay-box summary").click()
    driver.find_element(By.ID, "paste-pdn").send_keys("11-15 11-16")
    driver.find_element(By.ID, "paste-replay").click()
    wait_for(driver, lambda: "11-16 is illegal" in (text(driver, "paste-error") or ""))
    assert text(driver, "fen") == fen_after([])


def test_tab_shows_a_focus_ring(driver, url):
    driver.get(f"{url}?view=play&opponent=hotseat")
    wait_for(driver, lambda: text(driver, "status") == "Black to move")
    type_keys(driver, Keys.TAB)
    style = driver.execute_script("const e = document.activeElement, s = getComputedStyle(e);"
                                  "return [e.tagName, s.outlineStyle, s.outlineWidth];")
    assert style[0] == "BUTTON" and style[1] == "solid" and style[2] == "3px"


def test_copy_buttons_copy_the_link_and_the_pdn(driver, url):
    driver.get(f"{url}?view=play&opponent=hotseat&moves=11-15+23-19")
    wait_fen(driver, fen_after(["11-15", "23-19"]))
    driver.execute_cdp_cmd("Browser.grantPermissions", {
        "origin": url.rstrip("/"), "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    read = "navigator.clipboard.readText().then(arguments[0], (e) => arguments[0](String(e)))"
    driver.find_element(By.ID, "copy-link").click()
    wait_for(driver, lambda: text(driver, "copy-link") == "Copied")
    assert driver.execute_async_script(read) == driver.current_url
    driver.find_element(By.ID, "copy-pdn").click()
    wait_for(driver, lambda: text(driver, "copy-pdn") == "Copied")
    pdn = driver.execute_async_script(read)
    assert "1. 11-15 23-19" in pdn and '[Result "*"]' in pdn
    wait_for(driver, lambda: text(driver, "copy-pdn") == "Copy PDN", timeout=5)


def test_the_explorers_line_is_kept_in_the_url(driver, url):
    driver.get(f"{url}?view=explore&fen={WON_FEN}")
    wait_fen(driver, WON_FEN)
    type_keys(driver, "14-9" + Keys.ENTER)  # typed in the explorer too
    wait_fen(driver, fen_after(["14-9"], WON_FEN))
    driver.find_element(By.CSS_SELECTOR, "tr.move-row[data-move='1-5']").click()
    wait_fen(driver, fen_after(["14-9", "1-5"], WON_FEN))
    params = url_params(driver)
    assert (params["fen"], params["line"]) == (WON_FEN, "14-9 1-5")
    driver.get(driver.current_url)  # the link opens on the line's end, with its way back
    wait_fen(driver, fen_after(["14-9", "1-5"], WON_FEN))
    driver.find_element(By.ID, "explore-back").click()
    wait_fen(driver, fen_after(["14-9"], WON_FEN))
    assert url_params(driver)["line"] == "14-9"


def test_a_bad_explorer_line_is_named(driver, url):
    driver.get(f"{url}?view=explore&fen={WON_FEN}&line=14-9+1-9")
    wait_for(driver, lambda: "stops at 1-9" in (text(driver, "explore-error") or ""))
    assert text(driver, "fen") == fen_after(["14-9"], WON_FEN)


def side_lines(driver) -> list[str]:
    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#side-lines .side-line")]


def test_a_new_line_keeps_the_old_one_a_click_away(driver, url):
    driver.get(f"{url}?view=play&opponent=hotseat&moves={'+'.join(OPENING)}")
    wait_fen(driver, fen_after(OPENING))
    assert side_lines(driver) == [] and driver.find_element(By.ID, "side-lines").get_attribute("hidden")
    driver.find_element(By.CSS_SELECTOR, "#move-list .move[data-ply='2']").click()
    wait_fen(driver, fen_after(OPENING[:2]))
    type_keys(driver, "9-13" + Keys.ENTER)
    wait_fen(driver, fen_after(OPENING[:2] + ["9-13"]))
    assert side_lines(driver) == ["2. 8-11 22-17"]  # the line left at move 2, Black's
    driver.find_element(By.CSS_SELECTOR, "#side-lines .side-line").click()
    wait_fen(driver, fen_after(OPENING[:2]))  # back where it parted, its moves ahead
    assert [t for t, _ in line(driver)] == OPENING
    assert side_lines(driver) == ["2. 9-13"]  # and the line left is kept in turn
    type_keys(driver, "8-11" + Keys.ENTER)  # the line's own next move: it goes on, nothing parts
    wait_fen(driver, fen_after(OPENING[:3]))
    assert [t for t, _ in line(driver)] == OPENING and side_lines(driver) == ["2. 9-13"]
    assert [("future" in c) for _, c in line(driver)] == [False, False, False, True]
