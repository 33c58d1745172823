"""The play page in a real browser: headless Chromium driven by Selenium.

Needs Debian's Chromium and its driver (``apt-get install chromium chromium-driver``);
never downloads a browser. Screenshots of each view go to test-artifacts/web/
(or $WEB_TEST_ARTIFACTS). The default run keeps at least one check of each view
(play, explore, the URL's errors, a gone server); the other checks of a view are
slow checks (`make test-all`, CI).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the web extras are missing: pip install -e '.[web]'")
pytest.importorskip("selenium", reason="selenium is missing: pip install -e '.[test]'")

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException  # noqa: E402
from selenium.webdriver.chrome.options import Options  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from egtb.probe.moves import best_moves
from egtb.probe.tablebase import Tablebase  # noqa: E402
from egtb.rules.board import Board  # noqa: E402
from egtb.rules.notation import START_FEN  # noqa: E402
from tournament.web.app import create_app  # noqa: E402
from tournament.web.engines import EngineService  # noqa: E402
from tournament.web.server import bind_socket  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
INSTALL_HINT = "needs Debian's Chromium and its driver: apt-get install chromium chromium-driver"
ARTIFACTS = Path(os.environ.get("WEB_TEST_ARTIFACTS", Path(__file__).resolve().parent.parent / "test-artifacts" / "web"))
TABLE_PIECES = 3
WAIT = 90  # seconds: the first engine move may wait for its engine process to start

#: Black must capture with the man on 2; two routes end on 18 (2x9x18 takes 6 and 14, 2x11x18 takes 7 and 15).
ROUTE_FEN = "B:W6,7,14,15,31:B2,20,26,28"
#: After 2x9x18 White's only move is 31x22; then Black's only move is the capture 18x25.
AFTER_ROUTE_AND_REPLY = "B:W7,15,22:B18,20,28"
WON_FEN = "W:WK10,K14:BK1"
OUTSIDE_FEN = "B:W18,24,27:B12,16"

# Slow checks (CI's .ci/run runs them): a Chromium, a served page and its engine processes, about
# 27 CPU s with test_web_browser_review's, which `make test`'s 3 minutes could not hold; the page's
# API is the default run's (test_web_api, test_web_analysis, test_web_review)
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()), reason=INSTALL_HINT)]


@pytest.fixture(scope="module")
def tables(built_tables) -> Path:
    return built_tables(TABLE_PIECES)


@contextlib.contextmanager
def served(app):
    """The URL of ``app`` served by uvicorn in a thread, until the block ends (then the server stops)."""
    import uvicorn

    sock = bind_socket(0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="module")
def url(tables):
    """The page served by uvicorn in a thread; "hard" thinks until its time is up, to be caught thinking."""
    engines = EngineService(tables_dir=tables, specs={"hard": "depth=60,time=30,pv_fill=200000"})
    with engines, served(create_app(tables_dir=tables, engines=engines)) as page:
        yield page


@pytest.fixture(scope="module")
def driver():
    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,860", "--hide-scrollbars"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        browser = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    except WebDriverException as exc:
        pytest.skip(f"Chromium did not start ({exc.msg}); {INSTALL_HINT}")
    browser.set_page_load_timeout(WAIT)
    yield browser
    browser.quit()


@pytest.fixture(autouse=True)
def no_script_errors(driver):
    """Every test ends with no error in the page's console (answers of 4xx are expected, not errors)."""
    driver.get_log("browser")
    yield
    errors = [entry["message"] for entry in driver.get_log("browser")
              if entry["level"] == "SEVERE" and "Failed to load resource" not in entry["message"]]
    assert errors == []


@pytest.fixture(scope="module")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


# --- helpers -------------------------------------------------------------------


def wait_for(driver, condition, *, timeout: float = WAIT, message: str = ""):
    wait = WebDriverWait(driver, timeout, poll_frequency=0.05, ignored_exceptions=(StaleElementReferenceException,))
    return wait.until(lambda d: condition(), message)


#: Run before the page's own scripts: each answer from the server is recorded in ``window.apiAnswers``
#: (its path) one task after its body arrived, so after the page's own read of that body has run.
RECORD_ANSWERS = """
window.apiAnswers = [];
const pageFetch = window.fetch;
window.fetch = (...args) => pageFetch(...args).then((response) => {
  response.clone().text().then(() => setTimeout(() => window.apiAnswers.push(new URL(response.url).pathname)));
  return response;
});
"""


@contextlib.contextmanager
def answers_recorded(driver):
    """Pages loaded in the block record the server's answers they have read: see :func:`answers`."""
    script = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_ANSWERS})
    try:
        yield
    finally:
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": script["identifier"]})


def answers(driver, path: str) -> int:
    """How many answers to ``path`` the page has read (pages loaded under :func:`answers_recorded`)."""
    return driver.execute_script("return window.apiAnswers || []").count(path)


def text(driver, element_id: str) -> str:
    """The element's visible text, read in one step (the page redraws often)."""
    return driver.execute_script("const e = document.getElementById(arguments[0]); return e ? e.innerText : null;",
                                 element_id)


def classes(driver, element_id: str) -> set[str]:
    found = driver.execute_script(
        "const e = document.getElementById(arguments[0]); return e ? e.getAttribute('class') : '';", element_id)
    return set((found or "").split())


def click_square(driver, square: int) -> None:
    driver.find_element(By.ID, f"sq-{square}").click()


def played(driver) -> list[str]:
    """The moves up to the position shown (the list also shows those after it, to step to: .future)."""
    texts = driver.execute_script(
        "return [...document.querySelectorAll('#move-list .move:not(.future)')].map((e) => e.textContent);")
    return [t for t in texts if t != "…"]


def move_rows(driver) -> list[dict]:
    """The explorer's move rows, read in one step: the page may draw the list again between two looks."""
    return driver.execute_script(
        "return [...document.querySelectorAll('#explore-moves tr.move-row')].map((r) => "
        "({move: r.dataset.move, value: r.dataset.value, classes: r.className, text: r.innerText}));")


def wait_fen(driver, fen: str) -> None:
    wait_for(driver, lambda: text(driver, "fen") == fen, message=f"FEN never became {fen}")


def screenshot(driver, artifacts: Path, name: str) -> None:
    driver.save_screenshot(str(artifacts / f"{name}.png"))


# --- play ----------------------------------------------------------------------


def test_play_easy_with_a_route_choice_a_forced_capture_and_undo(driver, url, artifacts):
    driver.get(f"{url}?view=play&fen={ROUTE_FEN}&opponent=easy&human=black")
    wait_for(driver, lambda: text(driver, "status").startswith("Black to move (you)"))
    assert text(driver, "status").endswith("a capture is compulsory")
    assert "must-capture" in classes(driver, "piece-2")
    assert "must-capture" not in classes(driver, "piece-20")

    click_square(driver, 20)  # a man that cannot capture: refused
    assert "selected" not in classes(driver, "piece-20")
    assert "capture is compulsory" in text(driver, "status")

    click_square(driver, 2)
    wait_for(driver, lambda: "selected" in classes(driver, "piece-2"))
    assert "target" in classes(driver, "sq-18")
    click_square(driver, 18)  # both routes end there: the page asks which
    wait_for(driver, lambda: driver.find_element(By.ID, "route-choice").is_displayed())
    routes = {b.get_attribute("data-move"): b for b in driver.find_elements(By.CSS_SELECTOR, "#routes .route")}
    assert set(routes) == {"2x9x18", "2x11x18"}
    assert "takes 6, 14" in routes["2x9x18"].text and "takes 7, 15" in routes["2x11x18"].text
    ActionChains(driver).move_to_element(routes["2x11x18"]).perform()
    wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, ".previews .capture-mark"))
    screenshot(driver, artifacts, "play-route-choice")
    routes["2x9x18"].click()

    wait_for(driver, lambda: played(driver) == ["2x9x18", "31x22"], message="the engine's forced reply")
    wait_fen(driver, AFTER_ROUTE_AND_REPLY)
    wait_for(driver, lambda: text(driver, "status").startswith("Black to move (you)"))
    assert "must-capture" in classes(driver, "piece-18")
    assert not {"must-capture"} & (classes(driver, "piece-20") | classes(driver, "piece-28"))
    click_square(driver, 18)
    click_square(driver, 25)
    wait_for(driver, lambda: len(played(driver)) == 4, message="the engine's reply to 18x25")
    board = Board(ROUTE_FEN)
    for move in played(driver):
        board.push_pdn(move)
    wait_fen(driver, board.fen())
    assert played(driver)[:3] == ["2x9x18", "31x22", "18x25"]
    screenshot(driver, artifacts, "play")

    driver.find_element(By.ID, "undo").click()  # takes back the engine's reply and 18x25
    wait_fen(driver, AFTER_ROUTE_AND_REPLY)
    driver.find_element(By.ID, "undo").click()  # and 31x22 with 2x9x18
    wait_fen(driver, ROUTE_FEN)
    assert played(driver) == []
    assert driver.find_element(By.ID, "undo").get_attribute("disabled") == "true"
    driver.find_element(By.ID, "redo").click()
    wait_fen(driver, AFTER_ROUTE_AND_REPLY)
    assert played(driver) == ["2x9x18", "31x22"]


def test_undo_while_the_engine_thinks_takes_back_the_move_and_stops_it(driver, url):
    with answers_recorded(driver):
        driver.get(f"{url}?view=play&opponent=hard&human=black&time=5")
    wait_for(driver, lambda: text(driver, "status").startswith("Black to move (you)"))
    click_square(driver, 11)
    click_square(driver, 15)
    wait_for(driver, lambda: driver.find_element(By.ID, "thinking").is_displayed())
    assert "thinking" in text(driver, "status")
    driver.find_element(By.ID, "undo").click()
    wait_fen(driver, START_FEN)
    assert not driver.find_element(By.ID, "thinking").is_displayed()
    # The stopped search's late answer has come and the page has read it: it must not have landed.
    wait_for(driver, lambda: answers(driver, "/api/engine-move") >= 1, message="the stopped search's answer")
    assert text(driver, "fen") == START_FEN and played(driver) == []
    assert text(driver, "status") == "Black to move (you)" and text(driver, "play-error") == ""


@pytest.mark.slow
def test_hot_seat_moves_both_sides_and_downloads_pdn(driver, url):
    driver.get(f"{url}?view=play&opponent=hotseat")
    wait_for(driver, lambda: text(driver, "status") == "Black to move")
    click_square(driver, 11)
    click_square(driver, 15)
    wait_for(driver, lambda: text(driver, "status") == "White to move")
    click_square(driver, 23)
    click_square(driver, 19)
    wait_for(driver, lambda: played(driver) == ["11-15", "23-19"])
    assert "1 of 80" not in text(driver, "rule-text") and "0 of 80" in text(driver, "rule-text")
    assert "moves=11-15+23-19" in driver.current_url
    pdn = driver.execute_script("return S.record.pdn")
    assert "1. 11-15 23-19 *" in pdn and '[Black "Player 1"]' in pdn


# --- explore -------------------------------------------------------------------


def test_explore_lists_the_tables_best_move_first_and_plays_it(driver, url, tables, artifacts):
    driver.get(f"{url}?view=explore&fen={WON_FEN}")
    wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, "#explore-moves tr.move-row[data-value]"))
    with Tablebase(tables) as tb:
        result = tb.probe(WON_FEN)
        best = best_moves(tb, WON_FEN).moves
    rows = driver.find_elements(By.CSS_SELECTOR, "#explore-moves tr.move-row")
    assert [r.get_attribute("data-move") for r in rows] == [str(mv.move) for mv in best]
    first = rows[0]
    assert first.get_attribute("data-value") == str(best[0].value) == "win"
    assert "Wins" in first.text and "value-win" in first.get_attribute("class")
    assert "value-loss" in rows[-1].get_attribute("class") and "Loses" in rows[-1].text
    shown = driver.find_element(By.ID, "explore-result")
    assert shown.get_attribute("data-value") == str(result.value)
    assert str(result.outcome) == "win" and result.counter == 0
    assert shown.text == "White to move wins under wcdf from counter 0"
    assert f"DTZ {result.dtz} plies" in text(driver, "explore-distance")
    assert f"DTW {result.dtw} plies" in text(driver, "explore-distance")
    assert f"DTZ {best[0].dtz} plies · DTW {best[0].dtw} plies" in first.text

    ActionChains(driver).move_to_element(first).perform()  # hover previews the move
    wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, ".previews .preview-path.best"))
    screenshot(driver, artifacts, "explore")

    driver.find_element(By.TAG_NAME, "body").send_keys(Keys.SPACE)  # the key for the best move
    board = Board(WON_FEN)
    board.push(best[0].move)
    wait_fen(driver, board.fen())
    with Tablebase(tables) as tb:
        after = tb.probe(board)  # the board counts the quiet king move: counter 1
    wait_for(driver, lambda: shown.get_attribute("data-value") == str(after.value))
    assert after.counter == 1
    assert shown.text == f"Black to move {'loses' if str(after.outcome) == 'loss' else 'draws'} under wcdf from counter 1"
    driver.find_element(By.ID, "explore-back").click()
    wait_fen(driver, WON_FEN)


def test_explore_says_when_a_position_is_outside_the_tables(driver, url, artifacts):
    driver.get(f"{url}?view=explore&fen={OUTSIDE_FEN}")
    wait_for(driver, lambda: driver.find_element(By.ID, "explore-outside").is_displayed())
    note = text(driver, "explore-outside")
    assert "5 pieces" in note and f"complete up to {TABLE_PIECES} pieces" in note
    assert "outside the tables" in text(driver, "explore-result")
    wait_for(driver, lambda: (rows := move_rows(driver)) and all("not in the tables" in r["text"] for r in rows),
             message="the moves are not all said to be outside the tables")
    screenshot(driver, artifacts, "explore-outside")


# --- edit ----------------------------------------------------------------------


@pytest.mark.slow
def test_position_editor_builds_a_fen_and_opens_it_in_the_explorer(driver, url, artifacts):
    driver.get(f"{url}?view=edit")
    wait_for(driver, lambda: driver.find_element(By.ID, "panel-edit").is_displayed())
    driver.find_element(By.ID, "edit-clear").click()
    driver.find_element(By.ID, "tool-W").click()
    click_square(driver, 10)
    click_square(driver, 14)
    driver.find_element(By.ID, "tool-B").click()
    click_square(driver, 1)
    driver.find_element(By.ID, "edit-turn-white").click()
    wait_for(driver, lambda: driver.find_element(By.ID, "edit-fen").get_attribute("value") == WON_FEN)
    wait_for(driver, lambda: "White to move" in text(driver, "edit-check"))
    assert "view=edit" in driver.current_url and "fen=W%3AWK10%2CK14%3ABK1" in driver.current_url

    driver.find_element(By.ID, "tool-B").click()
    click_square(driver, 30)
    wait_for(driver, lambda: {"black", "king"} <= classes(driver, "piece-30"))
    driver.find_element(By.ID, "tool-x").click()
    click_square(driver, 30)
    wait_for(driver, lambda: not classes(driver, "piece-30"))

    driver.find_element(By.ID, "numbers").click()
    assert len(driver.find_elements(By.CSS_SELECTOR, ".square-number")) == 32
    before = driver.find_element(By.ID, "sq-1").get_attribute("x")
    driver.find_element(By.ID, "flip").click()
    assert driver.find_element(By.ID, "sq-1").get_attribute("x") == str(700 - int(before))
    screenshot(driver, artifacts, "edit")
    driver.find_element(By.ID, "flip").click()
    driver.find_element(By.ID, "numbers").click()

    driver.find_element(By.ID, "edit-explore").click()
    wait_for(driver, lambda: driver.find_element(By.ID, "explore-result").get_attribute("data-value") == "win")
    assert text(driver, "fen") == WON_FEN


def test_a_bad_fen_in_the_url_is_reported_not_a_blank_page(driver, url):
    with answers_recorded(driver):
        driver.get(f"{url}?view=edit&fen=B:W40:B1")
    wait_for(driver, lambda: "unknown square 40" in text(driver, "edit-error"))
    # and it stays once the editor's own check (of the empty board it shows) has answered too
    wait_for(driver, lambda: answers(driver, "/api/moves") >= 2, message="the editor's check of its board")
    assert "unknown square 40" in text(driver, "edit-error")
    assert driver.find_element(By.ID, "edit-fen").get_attribute("value") == "B:W40:B1"



def test_explore_at_a_late_counter_shows_the_win_the_move_rule_draws(driver, url, tables):
    driver.get(f"{url}?view=explore&fen={WON_FEN}&counter=70")
    shown = driver.find_element(By.ID, "explore-result")
    wait_for(driver, lambda: shown.get_attribute("data-value") == "win")
    with Tablebase(tables) as tb:
        late = tb.probe(WON_FEN, rule="wcdf", counter=70)
        moves = best_moves(tb, WON_FEN, rule="wcdf", counter=70).moves
    assert str(late.outcome) == "draw" and late.dtz + 70 > 80  # won without the rule, too late with it
    assert shown.text == "White to move draws by the move rule (a win without it) under wcdf from counter 70"
    assert "value-cursed-win" in shown.get_attribute("class")
    rows = move_rows(driver)
    assert [r["move"] for r in rows] == [str(mv.move) for mv in moves]
    kinds = {r["move"]: r["classes"] for r in rows}
    for mv in moves:
        expected = {"draw": "value-cursed-win" if str(mv.value) == "win" else "value-draw",
                    "loss": "value-loss", "win": "value-win"}[str(mv.outcome)]
        assert expected in kinds[str(mv.move)]
    counter = driver.find_element(By.ID, "explore-counter")
    counter.clear()
    counter.send_keys("0", Keys.ENTER)  # back to a fresh counter: a win again
    wait_for(driver, lambda: shown.text == "White to move wins under wcdf from counter 0")


def test_a_multi_jump_can_be_made_step_by_step(driver, url):
    driver.get(f"{url}?view=play&fen={ROUTE_FEN}&opponent=hotseat")
    wait_for(driver, lambda: text(driver, "status").startswith("Black to move"))
    click_square(driver, 2)
    wait_for(driver, lambda: "step" in classes(driver, "sq-9") and "step" in classes(driver, "sq-11"))
    click_square(driver, 11)  # the first landing square leaves one route: the page plays it
    wait_for(driver, lambda: played(driver) == ["2x11x18"])
    assert not driver.find_element(By.ID, "route-choice").is_displayed()
    assert text(driver, "status").startswith("White to move")


# --- issue 21: the page's defects, each with a test that failed before its fix -------------------------------

#: A white king on 10 takes all four men round the square and lands back on 10, by either way round.
CIRCLE_FEN = "W:WK10:B14,15,22,23"
#: Four pieces (outside the 3-piece tables); Black must capture 9x18 into them.
CAPTURE_IN_FEN = "B:W14,K30:B9,K1"


def dispatch_clicks(driver, *squares: int) -> None:
    """Click squares in one script, faster than any round trip to the server."""
    driver.execute_script("for (const s of arguments[0]) document.getElementById('sq-' + s)"
                          ".dispatchEvent(new MouseEvent('click', {bubbles: true}));", list(squares))


def luminance(css_colour: str) -> float:
    """Relative brightness 0 (black) to 1 (white) of an rgb()/rgba() colour."""
    inside = css_colour[css_colour.index("(") + 1:css_colour.index(")")]
    red, green, blue = (float(part) for part in inside.split(",")[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


def test_the_explorer_tab_opens_on_the_games_position_and_has_a_fen_box(driver, url):
    driver.get(f"{url}?view=play&opponent=hotseat&moves=11-15")
    wait_for(driver, lambda: text(driver, "status") == "White to move")
    game_fen = text(driver, "fen")
    driver.find_element(By.ID, "tab-explore").click()
    wait_for(driver, lambda: "White to move" in (text(driver, "explore-result") or ""))
    assert text(driver, "fen") == game_fen and driver.find_elements(By.CSS_SELECTOR, ".pieces .piece")
    box = driver.find_element(By.ID, "explore-fen")
    assert box.get_attribute("value") == game_fen
    box.clear()
    box.send_keys(WON_FEN, Keys.ENTER)
    wait_for(driver, lambda: driver.find_element(By.ID, "explore-result").get_attribute("data-value") == "win")
    assert text(driver, "fen") == WON_FEN


@pytest.mark.slow
def test_the_explorer_tab_opens_on_the_start_without_a_game(driver, url):
    driver.get(f"{url}?view=edit")
    wait_for(driver, lambda: driver.find_element(By.ID, "panel-edit").is_displayed())
    driver.execute_script("S.record = null;")
    driver.find_element(By.ID, "tab-explore").click()
    wait_for(driver, lambda: text(driver, "fen") == START_FEN)
    assert len(driver.find_elements(By.CSS_SELECTOR, ".pieces .piece")) == 24


@pytest.mark.slow
def test_the_game_result_line_is_dark_on_the_pale_panel(driver, url):
    driver.get(f"{url}?view=play&opponent=hotseat&fen=B:W14,23:B9&moves=9x18x27")
    wait_for(driver, lambda: (text(driver, "game-over") or "").endswith("1-0"))
    colour = driver.execute_script("return getComputedStyle(document.querySelector('#move-list li:last-child')).color")
    assert driver.execute_script("return document.querySelector('#move-list li:last-child').textContent") == "1-0"
    assert luminance(colour) < 0.3, colour


def test_play_from_here_keeps_the_rule_and_the_counter(driver, url):
    driver.get(f"{url}?view=explore&fen={WON_FEN}&rule=forty-plies&counter=30")
    wait_for(driver, lambda: "under forty-plies from counter 30" in (text(driver, "explore-result") or ""))
    driver.execute_script("document.getElementById('opponent').value = 'hotseat';")  # nobody moves meanwhile
    driver.find_element(By.ID, "explore-play").click()
    wait_for(driver, lambda: driver.find_element(By.ID, "panel-play").is_displayed())
    wait_for(driver, lambda: "30 of 40 quiet plies" in (text(driver, "rule-text") or ""))
    assert driver.execute_script("return [S.game.rule, S.game.counter]") == ["forty-plies", 30]
    assert "rule=forty-plies" in driver.current_url and "counter=30" in driver.current_url


@pytest.mark.slow
def test_the_dtz_wording_and_the_counter_limit_follow_the_preset(driver, url):
    driver.get(f"{url}?view=explore&fen={WON_FEN}&rule=crowning")
    wait_for(driver, lambda: "DTZ" in (text(driver, "explore-distance") or ""))
    assert "next capture or crowning" in text(driver, "explore-distance")
    assert "man move" not in text(driver, "explore-distance") and "man move" not in text(driver, "dtz-help")
    driver.get(f"{url}?view=play&opponent=hotseat")
    wait_for(driver, lambda: text(driver, "status") == "Black to move")
    assert driver.find_element(By.ID, "start-counter").get_attribute("max") == "80"
    driver.execute_script("const r = document.getElementById('rule'); r.value = 'forty-plies';"
                          "r.dispatchEvent(new Event('change'));")
    assert driver.find_element(By.ID, "start-counter").get_attribute("max") == "40"


@pytest.mark.parametrize("query, words", [
    ("fen=garbage", "FEN 'garbage'"),
    ("moves=11-15+11-16", "move 2 (11-16)"),
])
def test_a_bad_play_url_is_reported(driver, url, query, words):
    driver.get(f"{url}?view=play&opponent=hotseat&{query}")
    wait_for(driver, lambda: text(driver, "status") == "Black to move")
    wait_for(driver, lambda: driver.find_element(By.ID, "play-error").is_displayed())
    assert words in text(driver, "play-error")


@pytest.mark.slow
def test_clicks_faster_than_a_round_trip_play_one_move(driver, url):
    driver.get(f"{url}?view=play&opponent=hotseat")
    wait_for(driver, lambda: text(driver, "status") == "Black to move")
    dispatch_clicks(driver, 11, 15, 9, 13)  # the second move is chosen before the first one's answer
    wait_for(driver, lambda: text(driver, "status") == "White to move")
    assert played(driver) == ["11-15"]
    assert driver.execute_script("return S.game.moves") == ["11-15"]
    assert driver.find_element(By.ID, "undo").get_attribute("disabled") is None
    assert not driver.find_element(By.ID, "play-error").is_displayed()


@pytest.mark.parametrize("clicks", [(10, 10), pytest.param((10, 19), marks=pytest.mark.slow),
                                    pytest.param((10, 17), marks=pytest.mark.slow)])
def test_a_circular_king_capture_can_be_entered_either_way(driver, url, clicks):
    driver.get(f"{url}?view=play&opponent=hotseat&fen={CIRCLE_FEN}")
    wait_for(driver, lambda: text(driver, "status").startswith("White to move"))
    for square in clicks:
        click_square(driver, square)
    wait_for(driver, lambda: len(played(driver)) == 1, message=f"clicks {clicks} made no move")
    assert played(driver) == ["10x17x26x19x10"]
    assert text(driver, "status").startswith("Black wins") is False and "White wins" in text(driver, "status")


def test_a_capture_into_the_tables_is_valued_in_the_explorer(driver, url, tables):
    driver.get(f"{url}?view=explore&fen={CAPTURE_IN_FEN}")
    wait_for(driver, lambda: driver.find_element(By.ID, "explore-outside").is_displayed())
    board = Board(CAPTURE_IN_FEN)
    board.push_pdn("9x18")
    with Tablebase(tables) as tb:
        after = tb.probe(board)
    expected = {"win": "loss", "loss": "win", "draw": "draw"}[str(after.value)]
    # the row is found anew at each look: the page may draw the move list again meanwhile
    row = lambda: driver.find_element(By.CSS_SELECTOR, "#explore-moves tr.move-row")  # noqa: E731
    wait_for(driver, lambda: row().get_attribute("data-value") == expected,
             message=f"the capture's row is not valued {expected}")
    assert row().get_attribute("data-value") == expected and "not in the tables" not in row().text


@pytest.mark.slow
def test_the_page_fits_390_pixels_and_keeps_the_route_choice_in_view(driver, url, artifacts):
    driver.set_window_size(390, 844)
    try:
        for view in ("play&opponent=hotseat", f"explore&fen={WON_FEN}", "edit"):
            driver.get(f"{url}?view={view}")
            wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, ".pieces .piece"))
            width = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
            assert width[0] <= width[1], (view, width)
        driver.get(f"{url}?view=play&opponent=hotseat&fen={ROUTE_FEN}")
        wait_for(driver, lambda: text(driver, "status").startswith("Black to move"))
        click_square(driver, 2)
        click_square(driver, 18)
        wait_for(driver, lambda: driver.find_element(By.ID, "route-choice").is_displayed())
        box = driver.execute_script("const r = document.getElementById('route-choice').getBoundingClientRect();"
                                    "return [r.top, r.bottom, r.right, window.innerHeight, window.innerWidth];")
        assert 0 <= box[0] and box[1] <= box[3] and box[2] <= box[4], box
        screenshot(driver, artifacts, "play-390-route-choice")
    finally:
        driver.set_window_size(1280, 860)


@pytest.mark.slow
def test_a_piece_can_be_dragged_and_the_move_is_animated(driver, url):
    driver.get(f"{url}?view=play&opponent=hotseat")
    wait_for(driver, lambda: text(driver, "status") == "Black to move")
    ActionChains(driver).drag_and_drop(driver.find_element(By.ID, "sq-11"), driver.find_element(By.ID, "sq-15")).perform()
    wait_for(driver, lambda: played(driver) == ["11-15"])
    assert driver.find_element(By.ID, "piece-15").get_attribute("data-animated") == "11-15"


@pytest.mark.slow
def test_hint_resign_and_a_draw_offer(driver, url, tables):
    driver.get(f"{url}?view=play&opponent=hotseat&fen={WON_FEN}")
    wait_for(driver, lambda: text(driver, "status").startswith("White to move"))
    driver.find_element(By.ID, "hint").click()
    with Tablebase(tables) as tb:
        best = str(best_moves(tb, WON_FEN).moves[0].move)
    wait_for(driver, lambda: (text(driver, "hint-text") or "").startswith(f"Hint: {best}"))
    assert driver.find_elements(By.CSS_SELECTOR, ".previews .preview-path.best")
    driver.find_element(By.ID, "resign").click()
    wait_for(driver, lambda: "Black wins: White resigns" in (text(driver, "game-over") or ""))
    assert '[Result "1-0"]' in driver.execute_script("return S.record.pdn")
    driver.find_element(By.ID, "undo").click()  # takes the resignation back
    wait_for(driver, lambda: not driver.find_element(By.ID, "game-over").is_displayed())

    driver.get(f"{url}?view=play&opponent=easy&human=white&fen={WON_FEN}")  # the computer (Black) loses here
    wait_for(driver, lambda: text(driver, "status").startswith("White to move (you)"))
    driver.find_element(By.ID, "offer-draw").click()
    wait_for(driver, lambda: "Draw agreed" in (text(driver, "game-over") or ""))
    assert '[Result "1/2-1/2"]' in driver.execute_script("return S.record.pdn")


@pytest.mark.slow
def test_the_thinking_time_is_offered_where_it_counts_and_shown(driver, url):
    driver.get(f"{url}?view=play&opponent=easy&human=white")
    wait_for(driver, lambda: played(driver), message="the computer's first move")
    assert driver.find_element(By.ID, "think-time").get_attribute("disabled") == "true"
    assert "fixed depth" in text(driver, "think-note")
    wait_for(driver, lambda: driver.find_element(By.ID, "engine-note").is_displayed())
    assert text(driver, "engine-note").startswith(f"Computer played {played(driver)[0]} after ")
    driver.execute_script("const o = document.getElementById('opponent'); o.value = 'hard';"
                          "o.dispatchEvent(new Event('change'));")
    assert driver.find_element(By.ID, "think-time").get_attribute("disabled") is None


def test_without_tables_perfect_is_not_offered_and_a_gone_server_is_reported(driver, tmp_path):
    with served(create_app(tables_dir=tmp_path, engines=None)) as page:
        driver.get(f"{page}?view=play&opponent=hotseat")
        wait_for(driver, lambda: text(driver, "status") == "Black to move")
        perfect = driver.find_element(By.CSS_SELECTOR, "#opponent option[value=perfect]")
        assert perfect.get_attribute("disabled") == "true" and "needs tables" in perfect.text
        assert not driver.find_element(By.ID, "offline").is_displayed()
    click_square(driver, 11)
    click_square(driver, 15)  # the move goes to a server that is gone
    wait_for(driver, lambda: driver.find_element(By.ID, "offline").is_displayed())
    assert "not answering" in text(driver, "offline") and played(driver) == []


# --- issue 32: the page's defects, each with a test that failed before its fix -------------------------------

#: A 3-move ballot; after it White is to move.
BALLOT = "11-15 23-19 8-11"


def play_first_legal_move(driver) -> str:
    """Click the first legal move the page offers; return it."""
    path, move = driver.execute_script("return [S.record.moves[0].path, S.record.moves[0].move]")
    for square in (path[0], path[-1]):
        click_square(driver, square)
    return move


@pytest.mark.parametrize("link, human", [
    ("opponent=easy&human=white", "White"),
    pytest.param(f"opponent=easy&human=black&moves={BALLOT.replace(' ', '+')}&fixed=3", "Black",
                 marks=pytest.mark.slow),
])
def test_undo_of_the_computers_move_then_its_new_move_leaves_nothing_to_redo(driver, url, link, human):
    fixed = 3 if "fixed" in link else 0
    with answers_recorded(driver):
        driver.get(f"{url}?view=play&{link}")
    wait_for(driver, lambda: len(played(driver)) == fixed + 1 and text(driver, "status").startswith(f"{human} to move (you)"),
             message="the computer's first move")
    driver.find_element(By.ID, "undo").click()  # takes back the computer's move; it plays again at once
    wait_for(driver, lambda: answers(driver, "/api/engine-move") >= 2 and len(played(driver)) == fixed + 1
             and text(driver, "status").startswith(f"{human} to move (you)"), message="the computer's new move")
    assert driver.execute_script("return S.game.redo") == []
    assert driver.find_element(By.ID, "redo").get_attribute("disabled") == "true"
    before = played(driver)
    driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_RIGHT)  # redo: nothing to replay
    assert played(driver) == before
    ours = play_first_legal_move(driver)
    wait_for(driver, lambda: len(played(driver)) == fixed + 3, message="the computer's reply to our move")
    assert played(driver)[fixed + 1] == ours and text(driver, "play-error") == ""


def test_play_from_here_gives_the_user_the_side_to_move(driver, url):
    with answers_recorded(driver):
        driver.get(f"{url}?view=explore&fen={WON_FEN}")  # White to move; the game form says "You play: Black"
    wait_for(driver, lambda: driver.find_element(By.ID, "explore-result").get_attribute("data-value") == "win")
    driver.execute_script("document.getElementById('opponent').value = 'easy';")
    assert driver.execute_script("return document.getElementById('human').value") == "black"
    driver.find_element(By.ID, "explore-play").click()
    wait_for(driver, lambda: text(driver, "status") == "White to move (you)")
    assert driver.execute_script("return S.game.human") == "white"
    assert "You" in text(driver, "players").split("White:")[1]
    time.sleep(1)  # the computer (Black) has no move to make: nothing comes
    assert played(driver) == [] and answers(driver, "/api/engine-move") == 0


@pytest.mark.parametrize("query, named, check", [
    ("view=play&opponent=hotseat&counter=-5", 'counter="-5"', "S.game.counter === 0 && S.record.pieces.black_men.length === 12"),
    ("view=explore&fen=garbage", "FEN 'garbage'", f"S.explore.fen === {START_FEN!r} && !!S.explore.record"),
    pytest.param("view=explore&rule=forty-plies&counter=50", 'counter="50"',
                 "S.explore.counter === 0 && S.explore.rule === 'forty-plies' && !!S.explore.record",
                 marks=pytest.mark.slow),
    pytest.param("view=play&opponent=hard&time=1000", 'time="1000"', "S.game.time === 1 && !!S.record",
                 marks=pytest.mark.slow),
    pytest.param("view=play&opponent=hard&time=abc", 'time="abc"', "S.game.time === 1 && !location.search.includes('NaN')",
                 marks=pytest.mark.slow),
    ("view=play&opponent=easy&human=purple", 'human="purple"', "S.game.human === 'black' && S.game.moves.length === 0"),
    pytest.param("view=play&opponent=strongest", 'opponent="strongest"', "S.game.opponent === 'easy'",
                 marks=pytest.mark.slow),
])
def test_a_bad_link_parameter_is_named_and_the_view_falls_back(driver, url, query, named, check):
    driver.get(f"{url}?{query}")
    # (before the page has its game, S.game is null: the check is false, not an error)
    wait_for(driver, lambda: driver.execute_script(f"try {{ return !!S.info && ({check}); }} catch (e) {{ return false; }}"),
             message=f"{query}: {check}")
    wait_for(driver, lambda: named in (text(driver, "link-error") or "") + (text(driver, "explore-error") or ""),
             message=f"{named} is not named")
    assert len(driver.find_elements(By.CSS_SELECTOR, ".pieces .piece")) == 24
    if "play" in query and "hotseat" not in query:
        wait_for(driver, lambda: text(driver, "status").startswith("Black to move (you)"))
        if "time" in query:  # a move of ours gets the computer's answer: the game is not stuck
            play_first_legal_move(driver)
            wait_for(driver, lambda: len(played(driver)) == 2, message="the computer's reply")
            assert text(driver, "play-error") == ""


def test_a_hint_that_comes_after_a_move_is_not_shown(driver, url):
    with answers_recorded(driver):
        driver.get(f"{url}?view=play&opponent=hotseat")
    wait_for(driver, lambda: text(driver, "status") == "Black to move")
    driver.find_element(By.ID, "hint").click()  # outside the tables: "hard" searches for a second
    dispatch_clicks(driver, 11, 15)  # and the move is made before its answer
    wait_for(driver, lambda: played(driver) == ["11-15"] and text(driver, "status") == "White to move")
    wait_for(driver, lambda: answers(driver, "/api/engine-move") >= 1, message="the hint's answer")
    assert not driver.find_element(By.ID, "hint-text").is_displayed()
    assert not driver.find_elements(By.CSS_SELECTOR, ".previews .preview-path.best")
    assert driver.execute_script("return S.hint") is None


def key(driver, name: str, **modifiers: bool) -> bool:
    """Dispatch a keydown on the page (as the browser would); return whether the page took it (preventDefault)."""
    return driver.execute_script(
        "const e = new KeyboardEvent('keydown', {key: arguments[0], bubbles: true, cancelable: true, ...arguments[1]});"
        "document.body.dispatchEvent(e); return e.defaultPrevented;", name, modifiers)


def test_keys_with_a_modifier_are_left_to_the_browser(driver, url):
    driver.get(f"{url}?view=play&opponent=hotseat&moves=11-15")
    wait_for(driver, lambda: text(driver, "status") == "White to move")
    assert key(driver, "ArrowLeft", altKey=True) is False  # Alt+Left: the browser's "back"
    key(driver, "f", ctrlKey=True)  # Ctrl+F: the browser's find
    key(driver, "f", metaKey=True)
    assert driver.execute_script("return [S.flipped, S.game.moves]") == [False, ["11-15"]]
    assert key(driver, "ArrowLeft") is True  # the plain key still undoes
    wait_for(driver, lambda: played(driver) == [])
    key(driver, "f")
    assert driver.execute_script("return S.flipped") is True
    assert "(a capture or man move resets it)" in text(driver, "rule-text")  # one article, not "or a man move"


def test_the_man_tool_refuses_a_crowning_row_square(driver, url):
    driver.get(f"{url}?view=edit&fen={WON_FEN}")
    wait_for(driver, lambda: "White to move" in (text(driver, "edit-check") or ""))
    driver.find_element(By.ID, "tool-b").click()
    click_square(driver, 30)
    wait_for(driver, lambda: "No black man can stand on 30" in (text(driver, "edit-check") or ""))
    assert not driver.find_elements(By.ID, "piece-30")
    assert "king" in text(driver, "edit-check")  # it says what to do instead
    click_square(driver, 30)  # a second click places nothing either
    assert not driver.find_elements(By.ID, "piece-30")
    driver.find_element(By.ID, "tool-w").click()
    click_square(driver, 3)
    wait_for(driver, lambda: "No white man can stand on 3" in (text(driver, "edit-check") or ""))
    assert driver.find_element(By.ID, "edit-fen").get_attribute("value") == WON_FEN
    click_square(driver, 18)  # elsewhere a man is placed, and a second click removes it
    wait_for(driver, lambda: {"white", "man"} <= classes(driver, "piece-18"))
    click_square(driver, 18)
    wait_for(driver, lambda: not driver.find_elements(By.ID, "piece-18"))


def test_a_refused_explorer_counter_shows_the_counter_in_use(driver, url):
    driver.get(f"{url}?view=explore&fen={WON_FEN}")
    shown = driver.find_element(By.ID, "explore-result")
    wait_for(driver, lambda: shown.text == "White to move wins under wcdf from counter 0")
    driver.find_element(By.ID, "explore-counter").send_keys(Keys.END, "95", Keys.ENTER)  # "0" then "95": 95
    wait_for(driver, lambda: "counter 95" in (text(driver, "explore-error") or ""))
    assert driver.find_element(By.ID, "explore-counter").get_attribute("value") == "0"


@pytest.mark.slow
def test_copy_says_it_copied_the_fen(driver, url):
    driver.get(f"{url}?view=play&opponent=hotseat")
    wait_for(driver, lambda: text(driver, "status") == "Black to move")
    driver.execute_cdp_cmd("Browser.grantPermissions", {"origin": url.rstrip("/"),
                                                        "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    driver.find_element(By.ID, "copy-fen").click()
    wait_for(driver, lambda: text(driver, "copy-fen") == "Copied")
    copied = driver.execute_async_script("navigator.clipboard.readText().then(arguments[0], (e) => arguments[0](String(e)))")
    assert copied == START_FEN
    wait_for(driver, lambda: text(driver, "copy-fen") == "Copy", timeout=5)


FEN_CHARACTER_TOPS = """
    const node = document.getElementById('fen'), tops = [];
    const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
    for (let t = walker.nextNode(); t; t = walker.nextNode()) {
      for (let i = 0; i < t.length; i++) {
        const r = document.createRange(); r.setStart(t, i); r.setEnd(t, i + 1);
        tops.push([t.data[i], Math.round(r.getBoundingClientRect().top)]);
      }
    }
    return tops;"""


@pytest.mark.slow
def test_the_fen_line_wraps_between_squares_not_inside_a_number(driver, url):
    driver.get(f"{url}?view=play&opponent=hotseat")
    wait_for(driver, lambda: text(driver, "fen") == START_FEN)
    try:
        wrapped = 0
        for width in range(390, 560, 6):  # the line breaks at a different place at each width
            driver.set_window_size(width, 844)
            tops = driver.execute_script(FEN_CHARACTER_TOPS)
            assert "".join(c for c, _ in tops) == START_FEN
            wrapped += len({top for _, top in tops}) > 1
            for (a, top_a), (b, top_b) in zip(tops, tops[1:]):
                if a.isdigit() and b.isdigit() or b in ",:":
                    assert top_a == top_b, f"at {width} px the line breaks between {a!r} and {b!r}"
        assert wrapped  # it did wrap at some of these widths
    finally:
        driver.set_window_size(1280, 860)


# --- issue 32: the engine's score and line outside the tables --------------------------------------


def test_explore_of_the_start_shows_the_engines_score_and_line_and_plays_it(driver, url, artifacts):
    driver.get(f"{url}?view=explore&fen={START_FEN}")
    wait_for(driver, lambda: driver.find_element(By.ID, "explore-analysis").is_displayed(),
             message="no engine analysis for a position outside the tables")
    state = lambda: driver.find_element(By.ID, "explore-analysis").get_attribute("data-state")  # noqa: E731
    assert state() == "searching" and text(driver, "explore-score") == "Engine (hard) searching…"
    wait_for(driver, lambda: state() != "searching", message="the engine never answered")
    assert state() == "done", text(driver, "explore-score")
    score = text(driver, "explore-score")
    assert score.startswith("Engine (hard): ") and "depth " in score
    assert any(words in score for words in (" for Black", " for White", "even")), score
    moves = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#explore-pv .pv-move")]
    assert len(moves) >= 3  # the plies read below (a 2 s search on a loaded machine may stop at 3)
    board = Board(START_FEN)
    for move in moves:
        board.push_pdn(move)  # the line shown is legal from the start
    assert text(driver, "explore-pv").startswith(f"Expected line: 1. {moves[0]} {moves[1]} 2. {moves[2]}")
    screenshot(driver, artifacts, "explore-engine")
    driver.find_elements(By.CSS_SELECTOR, "#explore-pv .pv-move")[1].click()  # plays the line's first two moves
    after = Board(START_FEN)
    after.push_pdn(moves[0])
    after.push_pdn(moves[1])
    wait_fen(driver, after.fen())
    wait_for(driver, lambda: state() == "searching")  # the new position is searched in turn
