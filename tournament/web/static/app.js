// The play-and-explore page: state, calls to the JSON API (docs/web.md), panels.
// The server decides what is legal (GET /api/moves); this file only picks among its moves.
"use strict";

const START_FEN = "B:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12";
const $ = (id) => document.getElementById(id);

const S = {
  view: "play",
  flipped: false,
  numbers: false,
  info: null,
  ballots: [],
  // Play: the game is its start, its fixed opening moves (a ballot) and the moves played.
  game: null,          // {startFen, rule, counter, fixed, moves, redo, opponent, human, time, event}
  record: null,        // /api/moves answer for the game's current position
  refreshSeq: 0,
  gameId: "",          // names the game to the server, so that a cancel stops only its search
  pending: false,      // a move of ours is on its way to the server: the board takes no other
  thinking: null,      // {token, strength} while an engine search runs
  thinkSeq: 0,
  lastEngine: null,    // {move, seconds, source} of the computer's last move
  hint: null,          // a move record suggested by "Hint", shown on the board
  browsing: false,     // the game is shown at an earlier move (the moves after it wait in redo): no engine moves
  review: null,        // {key, data}: the tables' review of the line `key` (start, rule, counter, moves)
  typed: "",           // a move being typed on the keyboard ("11-15", then Enter)
  animate: null,       // {path, to}: the move to animate at the next drawing
  drag: null,          // {from, x, y, moved} while a piece is dragged
  // Choosing a move on the board (play and explore).
  selection: null,     // {from, prefix: [squares]}
  routes: null,        // moves offered in the route choice
  routeHover: null,
  // Explore.
  explore: {fen: START_FEN, rule: "wcdf", counter: 0, back: [], forward: [], record: null, probe: null,
            missing: null, hover: null, seq: 0,
            // the engine's view of a position outside the tables: {fen, state: "searching"|"done"|"error",
            // data, error, game, controller}
            analysis: null},
  // Edit.
  edit: {pieces: {}, turn: "black", tool: "b", seq: 0},
};

// --- API -------------------------------------------------------------------

async function api(path, params, body, signal) {
  let url = path;
  if (params) url += "?" + new URLSearchParams(params).toString();
  const options = body === undefined ? {} : {method: "POST", headers: {"Content-Type": "application/json"},
                                             body: JSON.stringify(body)};
  if (signal) options.signal = signal;
  let response;
  try {
    response = await fetch(url, options);
  } catch (error) {
    if (error.name === "AbortError") return {status: 0, ok: false, aborted: true, data: {error: "aborted"}};
    // no answer at all: the server is gone
    setOffline(true);
    return {status: 0, ok: false, offline: true, data: {error: "the server is not answering"}};
  }
  setOffline(false);
  let data;
  try { data = await response.json(); } catch (e) { data = {error: `${response.status} ${response.statusText}`}; }
  return {status: response.status, ok: response.ok, data};
}

function setOffline(gone) {
  $("offline").hidden = !gone;
}

function newGameId() {
  return "g" + Date.now().toString(36) + Math.random().toString(36).slice(2, 8);
}

function gameParams(game, moves) {
  const params = {fen: game.startFen, moves: moves.join(" "), rule: game.rule, counter: String(game.counter)};
  if (game.end) params.end = game.end;
  const names = playerNames(game);
  params.Black = names.black;
  params.White = names.white;
  if (game.event) params.Event = game.event;
  return params;
}

// --- small helpers ---------------------------------------------------------

function turnOfFen(fen) { return fen.trim().toUpperCase().startsWith("W") ? "white" : "black"; }
function other(colour) { return colour === "black" ? "white" : "black"; }
function capital(text) { return text.charAt(0).toUpperCase() + text.slice(1); }
function plies(n) { return `${n} ${n === 1 ? "ply" : "plies"}`; }

/** What resets the counter of a preset, in words: "a capture or man move", "a capture or crowning"
 *  (one article for both: "the next capture or man move"). */
function zeroingWords(rule) {
  const preset = S.info && S.info.rules[rule];
  return preset && !preset.man_move_resets ? "a capture or crowning" : "a capture or man move";
}

function limitOf(rule) {
  return S.info && S.info.rules[rule] ? S.info.rules[rule].limit : 80;
}

function piecesOf(record) {
  const pieces = {};
  if (!record) return pieces;
  for (const s of record.pieces.black_men) pieces[s] = "b";
  for (const s of record.pieces.black_kings) pieces[s] = "B";
  for (const s of record.pieces.white_men) pieces[s] = "w";
  for (const s of record.pieces.white_kings) pieces[s] = "W";
  return pieces;
}

function showError(id, message) {
  const node = $(id);
  node.textContent = message || "";
  node.hidden = !message;
}

function playerNames(game) {
  if (game.opponent === "hotseat") return {black: "Player 1", white: "Player 2"};
  const engine = `Computer (${game.opponent})`;
  return game.human === "black" ? {black: "You", white: engine} : {black: engine, white: "You"};
}

// --- URL -------------------------------------------------------------------

function updateUrl() {
  const params = new URLSearchParams();
  params.set("view", S.view);
  if (S.view === "play" && S.game) {
    params.set("fen", S.game.startFen);
    const moves = fullLine();
    if (moves.length) params.set("moves", moves.join(" "));
    if (S.game.redo.length) params.set("at", String(S.game.moves.length));
    if (S.game.fixed) params.set("fixed", String(S.game.fixed));
    params.set("opponent", S.game.opponent);
    params.set("human", S.game.human);
    params.set("rule", S.game.rule);
    if (S.game.counter) params.set("counter", String(S.game.counter));
    if (S.game.opponent !== "hotseat") params.set("time", String(S.game.time));
  } else if (S.view === "explore") {
    const {root, line} = exploreLine();
    params.set("fen", root.fen);
    if (line.length) params.set("line", line.join(" "));
    params.set("rule", S.explore.rule);
    if (root.counter) params.set("counter", String(root.counter));
  } else if (S.view === "edit") {
    params.set("fen", editFen());
  }
  if (S.flipped) params.set("flip", "1");
  if (S.numbers) params.set("numbers", "1");
  history.replaceState(null, "", "?" + params.toString());
}

// --- the board ---------------------------------------------------------------

let svg = null;

function currentRecord() {
  if (S.view === "play") return S.record;
  if (S.view === "explore") return S.explore.record;
  return null;
}

function canChooseMove() {
  if (S.view === "explore") return !!S.explore.record && !S.explore.record.outcome;
  if (S.view !== "play" || !S.record || S.record.outcome || S.thinking || S.pending) return false;
  return S.game.opponent === "hotseat" || S.record.turn === S.game.human;
}

/** The routes of a move (every capture path; a king going round may go either way) that start with the prefix. */
function routesFrom(move, prefix) {
  return (move.routes || [move.path]).filter((route) => prefix.every((s, i) => route[i] === s));
}

/** Legal moves still possible with the current selection (those with a route starting with its prefix). */
function candidates() {
  const record = currentRecord();
  if (!record || !S.selection) return [];
  return record.moves.filter((m) => routesFrom(m, S.selection.prefix).length);
}

/** Squares a route of the candidates passes through next (not their last square). */
function nextSteps(moves, prefix) {
  const depth = prefix.length;
  return moves.flatMap((m) => routesFrom(m, prefix).filter((r) => r.length > depth + 1).map((r) => r[depth]));
}

function renderBoard() {
  const scene = {flipped: S.flipped, numbers: S.numbers, previews: []};
  if (S.view === "edit") {
    scene.pieces = S.edit.pieces;
    BoardView.draw(svg, scene);
    return;
  }
  const record = currentRecord();
  scene.pieces = piecesOf(record);
  if (S.view === "play" && S.game && S.game.moves.length && S.lastMove) scene.lastMove = S.lastMove;
  if (S.view === "explore" && S.explore.lastMove) scene.lastMove = S.explore.lastMove;
  if (record && canChooseMove()) {
    const starts = [...new Set(record.moves.map((m) => m.from))];
    if (record.capture) scene.mustCapture = starts; else scene.movable = starts;
    if (S.selection) {
      const moves = candidates();
      const depth = S.selection.prefix.length;
      scene.selected = S.selection.from;
      scene.targets = [...new Set(moves.map((m) => m.to))];
      scene.steps = [...new Set(nextSteps(moves, S.selection.prefix))];
      scene.captured = [];
      if (depth > 1) {
        scene.previews.push({path: S.selection.prefix, captured: [], kind: "partial"});
      }
    }
  }
  if (S.routes) {
    const shown = S.routeHover || S.routes[0];
    scene.previews.push({path: shown.path, captured: shown.captured, kind: "route"});
  }
  if (S.view === "play" && S.hint) scene.previews.push({path: S.hint.path, captured: S.hint.captured, kind: "best"});
  if (S.animate && BoardView.animating(S.animate)) scene.animate = S.animate; else S.animate = null;
  if (S.view === "explore" && S.explore.hover) {
    const m = S.explore.hover;
    scene.previews.push({path: m.path, captured: m.captured, kind: m.best ? "best" : "hover"});
  }
  BoardView.draw(svg, scene);
}

// --- dragging a piece: press on it, let go on the square to move to ---------------

function onPointerDown(event) {
  const square = BoardView.squareOf(event);
  const record = currentRecord();
  if (square === null || S.view === "edit" || !canChooseMove() || S.routes) return;
  if (!record.moves.some((m) => m.from === square)) return;
  S.drag = {from: square, x: event.clientX, y: event.clientY, moved: false};
}

function onPointerMove(event) {
  const drag = S.drag;
  if (!drag) return;
  const dx = event.clientX - drag.x, dy = event.clientY - drag.y;
  if (!drag.moved && Math.hypot(dx, dy) < 6) return;  // a click, not a drag
  if (!drag.moved) {  // a drag begins: the board follows the pointer even outside it (no capture for clicks)
    drag.moved = true;
    svg.setPointerCapture(event.pointerId);
    S.selection = {from: drag.from, prefix: [drag.from]};
    renderBoard();
  }
  BoardView.shift(svg, drag.from, dx, dy, S.flipped);
}

function onPointerUp(event) {
  const drag = S.drag;
  S.drag = null;
  if (!drag || !drag.moved) return;
  S.suppressClick = true;  // the click that follows the drag is not a second choice
  setTimeout(() => { S.suppressClick = false; }, 0);
  const under = document.elementFromPoint(event.clientX, event.clientY);
  const node = under && under.closest("[data-square]");
  const square = node ? Number(node.getAttribute("data-square")) : null;
  if (square === null || square === drag.from) { renderBoard(); return; }
  chooseSquare(square);
}

function onBoardClick(event) {
  if (S.suppressClick) return;
  const square = BoardView.squareOf(event);
  if (square === null) return;
  if (S.view === "edit") { editPlace(square); return; }
  if (!canChooseMove() || S.routes) return;
  const record = currentRecord();
  const starts = new Set(record.moves.map((m) => m.from));
  const endsHere = S.selection && candidates().some((m) => m.to === square);  // a king's capture round to its start
  if (starts.has(square) && !endsHere && (!S.selection || S.selection.from !== square || S.selection.prefix.length === 1)) {
    S.selection = S.selection && S.selection.from === square ? null : {from: square, prefix: [square]};
    renderBoard();
    return;
  }
  if (!S.selection) {
    flashStatus(record.capture ? "A capture is compulsory: pick a highlighted piece." : "Pick one of your pieces.");
    return;
  }
  chooseSquare(square);
}

/** A click on a square after a piece was picked: finish a move, take a step, or offer routes. */
function chooseSquare(square) {
  const moves = candidates();
  const depth = S.selection.prefix.length;
  const ending = moves.filter((m) => m.to === square);
  const passing = moves.filter((m) => m.to !== square && nextSteps([m], S.selection.prefix).includes(square));
  if (ending.length === 1 && passing.length === 0) { playChosen(ending[0]); return; }
  if (ending.length === 0 && passing.length > 0) {
    S.selection.prefix = [...S.selection.prefix, square];
    const left = candidates();
    if (left.length === 1) { playChosen(left[0]); return; }
    renderBoard();
    return;
  }
  if (ending.length + passing.length > 1) { offerRoutes([...ending, ...passing]); return; }
  S.selection = null;  // a square no move goes to: drop the selection
  renderBoard();
}

function offerRoutes(moves) {
  S.routes = moves;
  S.routeHover = null;
  const box = $("routes");
  box.innerHTML = "";
  for (const move of moves) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "route";
    button.dataset.move = move.move;
    button.textContent = `${move.move}  (takes ${move.captured.join(", ")})`;
    button.addEventListener("mouseenter", () => { S.routeHover = move; renderBoard(); });
    button.addEventListener("focus", () => { S.routeHover = move; renderBoard(); });
    button.addEventListener("click", () => playChosen(move));
    box.appendChild(button);
  }
  placeRouteBox();
  $("route-choice").hidden = false;
  $("route-choice").scrollIntoView({block: "nearest"});
  renderBoard();
}

function placeRouteBox() {
  const box = $("route-choice");
  const panel = S.view === "explore" ? $("panel-explore") : $("panel-play");
  if (box.parentNode !== panel) panel.insertBefore(box, panel.querySelector(".controls"));
}

function closeRoutes() {
  S.routes = null;
  S.routeHover = null;
  $("route-choice").hidden = true;
}

function playChosen(move) {
  closeRoutes();
  S.selection = null;
  if (S.view === "play") humanMove(move); else exploreMove(move);
}

function flashStatus(message) {
  const status = $("status");
  status.dataset.flash = message;
  status.textContent = message;
  setTimeout(() => { if (status.dataset.flash === message) { delete status.dataset.flash; renderStatus(); } }, 1800);
}

// --- play ------------------------------------------------------------------

function readNewGameForm() {
  const start = document.querySelector("input[name=start]:checked").value;
  let startFen = START_FEN, fixed = [], event = "Casual game";
  if (start === "fen") {
    startFen = $("start-fen").value.trim();
    event = "Game from a position";
  } else if (start === "ballot") {
    const ballot = S.ballots[Number($("ballot").value)];
    if (ballot) { fixed = ballot.moves.slice(); event = ballot.name; }
  }
  return {startFen, fixed: fixed.length, moves: fixed, redo: [], lines: [], event,
          rule: $("rule").value, counter: Number($("start-counter").value) || 0,
          opponent: $("opponent").value, human: $("human").value, time: Number($("think-time").value)};
}

async function startGame(game) {
  cancelThinking();
  closeRoutes();
  S.selection = null;
  setLastMove(game.moves.length ? game.moves[game.moves.length - 1] : null);
  if (game.redo.length) {  // moves ahead of the position shown (a link's, a pasted game's): all must be legal
    const whole = await api("/api/moves", gameParams(game, [...game.moves, ...[...game.redo].reverse()]));
    if (!whole.ok) { showError("play-error", whole.data.error); return false; }
  }
  const answer = await api("/api/moves", gameParams(game, game.moves));
  if (!answer.ok) { showError("play-error", answer.data.error); return false; }
  showError("play-error", "");
  S.game = game;
  S.browsing = game.redo.length > 0;
  S.gameId = newGameId();
  S.record = answer.data;
  S.lastEngine = null;
  dropHint();
  if (game.opponent !== "hotseat") S.flipped = game.human === "black";
  renderAll();
  maybeEngineMove();
  return true;
}

async function refreshGame() {
  const seq = ++S.refreshSeq;
  const answer = await api("/api/moves", gameParams(S.game, S.game.moves));
  if (seq !== S.refreshSeq) return;
  if (!answer.ok) { showError("play-error", answer.data.error); return; }
  showError("play-error", "");
  S.record = answer.data;
  renderAll();
  maybeEngineMove();
}

function setLastMove(moveText, {animate = false} = {}) {
  S.lastMove = moveText ? moveText.split(/[-x]/).map(Number) : null;
  S.animate = animate && S.lastMove
    ? {path: S.lastMove, to: S.lastMove[S.lastMove.length - 1], started: performance.now()} : null;
}

/** Play our move: the server checks it against the position it was chosen on (its ply) before the game
 *  takes it, and the board takes no other move meanwhile, so clicks faster than a round trip cannot
 *  store two moves of one side. */
async function humanMove(move) {
  if (S.pending || !S.record) return;
  $("new-game-box").open = false;  // the board and the move list matter now
  const moves = [...S.game.moves, move.move];
  const params = {...gameParams(S.game, moves), ply: String(S.record.played.length)};
  S.pending = true;
  dropHint();
  const answer = await api("/api/moves", params);
  S.pending = false;
  if (answer.status === 409) { flashStatus("That move was chosen on an old position: it was dropped."); renderAll(); return; }
  if (!answer.ok) { showError("play-error", answer.data.error); renderAll(); return; }
  showError("play-error", "");
  S.refreshSeq++;  // an older refresh still on its way must not overwrite this record
  const ahead = S.game.redo.length ? S.game.redo[S.game.redo.length - 1] : null;
  if (ahead === move.move) {
    S.game.redo.pop();  // the line's own next move: the line goes on, the moves after it kept
  } else {
    keepSideLine();  // a move from an earlier position starts a new line; the old one stays a click away
    S.game.redo = [];
  }
  S.game.moves = moves;
  S.browsing = S.game.redo.length > 0;
  setLastMove(move.move, {animate: true});
  S.record = answer.data;
  renderAll();
  maybeEngineMove();
}

function engineToMove() {
  return S.game && S.record && !S.record.outcome && S.game.opponent !== "hotseat" && S.record.turn !== S.game.human;
}

async function maybeEngineMove() {
  if (!engineToMove() || S.thinking || S.browsing) return;
  const token = ++S.thinkSeq;
  const length = S.game.moves.length;
  S.thinking = {token, strength: S.game.opponent};
  renderPlayInfo();
  renderStatus();
  renderBoard();
  const answer = await api("/api/engine-move", undefined, {
    fen: S.game.startFen, history: S.game.moves, rule: S.game.rule, counter: S.game.counter,
    strength: S.game.opponent, time: S.game.time, game: S.gameId});
  if (!S.thinking || S.thinking.token !== token || S.game.moves.length !== length) return;  // undone meanwhile
  S.thinking = null;
  if (!answer.ok) {
    showError("play-error", answer.data.error);
    renderAll();
    return;
  }
  S.game.moves.push(answer.data.move);
  S.game.redo = [];  // the game has left the line the taken-back moves belonged to
  dropHint();
  S.lastEngine = {move: answer.data.move, seconds: answer.data.seconds, source: answer.data.source};
  setLastMove(answer.data.move, {animate: true});
  refreshGame();
}

/** Forget the hint (and stop its search): the position it was for has changed. */
function dropHint() {
  S.hint = null;
  if (S.hintAsked) {
    api("/api/engine-cancel", undefined, {game: `${S.hintAsked.gameId}-hint`});
    S.hintAsked = null;
  }
}

function cancelThinking() {
  if (!S.thinking) return;
  S.thinking = null;
  api("/api/engine-cancel", undefined, {game: S.gameId});
}

/** The side whose turn it is at the board, when that is a person (hot-seat: either side). */
function humanToMove() {
  return S.game && S.record && !S.record.outcome && (S.game.opponent === "hotseat" || S.record.turn === S.game.human);
}

/** "Hint": the computer's choice for the side to move (the tables' best move where they reach). */
async function hint() {
  if (!humanToMove() || S.pending) return;
  const asked = {gameId: S.gameId, ply: S.record.played.length, fen: S.record.fen};
  S.hintAsked = asked;
  const inTables = S.info.strengths.includes("perfect") && S.record.piece_count <= S.info.max_pieces;
  const answer = await api("/api/engine-move", undefined, {
    fen: S.game.startFen, history: S.game.moves, rule: S.game.rule, counter: S.game.counter,
    strength: inTables ? "perfect" : "hard", time: 1, game: `${S.gameId}-hint`});
  // a hint that comes after a move (or an undo, or a new game) is about a position the board has left
  if (S.hintAsked !== asked || !S.record || S.gameId !== asked.gameId || S.record.fen !== asked.fen) return;
  S.hintAsked = null;
  if (answer.data.cancelled) return;
  if (!answer.ok) { showError("play-error", answer.data.error); return; }
  S.hint = answer.data;
  $("hint-text").textContent = `Hint: ${answer.data.move}` + (answer.data.source === "tables" ? " (the tables' best move)" : "");
  renderAll();
}

/** End the game by the players' say ("black-resigns", "white-resigns", "draw-agreed"). */
async function endGame(end) {
  cancelThinking();
  S.game.end = end;
  await refreshGame();
}

function resign() {
  if (!S.game || !S.record || S.record.outcome) return;
  const loser = S.game.opponent === "hotseat" ? S.record.turn : S.game.human;
  endGame(`${loser}-resigns`);
}

/** Offer a draw: two people at one board agree at once; the computer accepts only when the tables
 *  say it does not win from here (under the rule, from the counter), and outside them plays on. */
async function offerDraw() {
  if (!S.game || !S.record || S.record.outcome) return;
  if (S.game.opponent === "hotseat") { endGame("draw-agreed"); return; }
  const probe = await api("/api/probe", {fen: S.record.fen, rule: S.record.rule, counter: String(S.record.counter)});
  if (!probe.ok) { flashStatus("The computer declines the draw: outside the tables it plays on."); return; }
  const mover = probe.data.outcome || probe.data.value;
  const engineOutcome = S.record.turn === S.game.human ? {win: "loss", loss: "win", draw: "draw"}[mover] : mover;
  if (engineOutcome === "win") { flashStatus("The computer declines the draw: the tables say it wins."); return; }
  endGame("draw-agreed");
}

function sideToMoveAfter(count) {
  const first = turnOfFen(S.game.startFen);
  return count % 2 === 0 ? first : other(first);
}

function undo() {
  if (!S.game || S.pending || (S.game.moves.length <= S.game.fixed && !S.game.end)) return;
  if (S.game.end) { S.game.end = null; refreshGame(); return; }  // take back a resignation or an agreed draw
  const wasThinking = !!S.thinking;
  cancelThinking();
  closeRoutes();
  S.selection = null;
  S.game.end = null;
  dropHint();
  const moves = S.game.moves;
  S.game.redo.push(moves.pop());
  // Against an engine, take back its reply too: stop on a position where the human is to move.
  if (!wasThinking && S.game.opponent !== "hotseat" && !S.browsing) {
    while (moves.length > S.game.fixed && sideToMoveAfter(moves.length) !== S.game.human) {
      S.game.redo.push(moves.pop());
    }
  }
  setLastMove(moves.length ? moves[moves.length - 1] : null);
  refreshGame();
}

function redo() {
  if (!S.game || !S.game.redo.length || S.thinking || S.pending || S.game.end) return;
  dropHint();
  closeRoutes();
  S.selection = null;
  const moves = S.game.moves;
  moves.push(S.game.redo.pop());
  if (S.game.opponent !== "hotseat" && !S.browsing) {
    while (S.game.redo.length && sideToMoveAfter(moves.length) !== S.game.human) moves.push(S.game.redo.pop());
  }
  if (!S.game.redo.length) S.browsing = false;
  setLastMove(moves[moves.length - 1]);
  refreshGame();
}

/** Most side lines a game keeps (the oldest is dropped first). */
const MAX_SIDE_LINES = 8;

/** Keep the game's whole line as a side line, from the position shown, when moves follow it there. */
function keepSideLine() {
  if (S.game.redo.length) addSideLine(S.game.moves.length, fullLine());
}

/** Add the line `moves`, parted from the game after `from` moves, to its side lines (once; the oldest
 *  dropped beyond MAX_SIDE_LINES). */
function addSideLine(from, moves) {
  const lines = S.game.lines || (S.game.lines = []);
  const key = moves.join(" ");
  const known = lines.findIndex((l) => l.moves.join(" ") === key);
  if (known >= 0) lines.splice(known, 1);
  lines.push({from, moves});
  while (lines.length > MAX_SIDE_LINES) lines.shift();
}

/** Go back to side line `index`, shown where it left the game; the line shown now becomes a side line. */
function restoreSideLine(index) {
  if (!S.game || S.pending || !S.game.lines || !S.game.lines[index]) return;
  const chosen = S.game.lines.splice(index, 1)[0];
  cancelThinking();
  closeRoutes();
  S.selection = null;
  dropHint();
  S.game.end = null;
  const current = fullLine();
  let from = 0;  // where the two lines part
  while (from < current.length && from < chosen.moves.length && current[from] === chosen.moves[from]) from++;
  if (current.length > from) addSideLine(from, current);
  const at = Math.max(S.game.fixed, Math.min(chosen.from, chosen.moves.length));
  S.game.moves = chosen.moves.slice(0, at);
  S.game.redo = chosen.moves.slice(at).reverse();
  S.browsing = S.game.redo.length > 0;
  setLastMove(at ? chosen.moves[at - 1] : null);
  refreshGame();
}

/** The side lines kept: each from the move where it left, a click restores it. */
function renderSideLines() {
  const box = $("side-lines");
  const lines = (S.game && S.game.lines) || [];
  box.hidden = !lines.length;
  box.innerHTML = "";
  if (!lines.length) return;
  const title = document.createElement("p");
  title.textContent = "Other lines (a click goes back to one):";
  box.appendChild(title);
  const blackFirst = turnOfFen(S.game.startFen) === "black";
  lines.forEach((l, index) => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "side-line";
    button.dataset.index = String(index);
    const ply = l.from;  // the first move of the line after the parting
    const number = Math.floor((ply + (blackFirst ? 0 : 1)) / 2) + 1;
    const black = sideToMoveAfter(ply) === "black";
    const shown = l.moves.slice(ply, ply + 6).join(" ");
    button.textContent = `${number}${black ? "." : "..."} ${shown}${l.moves.length > ply + 6 ? " …" : ""}`;
    button.title = `Go back to this line (${l.moves.length} moves)`;
    button.addEventListener("click", () => restoreSideLine(index));
    box.appendChild(button);
  });
}

/** The game's whole line: the moves up to the position shown and those after it (redo). */
function fullLine() {
  return S.game ? [...S.game.moves, ...[...S.game.redo].reverse()] : [];
}

/** Show the game after `ply` moves of its line (not before its fixed opening moves); a move played
 *  there starts a new line from it, and the computer waits while an earlier position is shown. */
function jumpTo(ply) {
  if (!S.game || S.pending) return;
  const line = fullLine();
  const target = Math.max(S.game.fixed, Math.min(ply, line.length));
  if (target === S.game.moves.length) return;
  cancelThinking();
  closeRoutes();
  S.selection = null;
  dropHint();
  S.game.end = null;
  S.game.moves = line.slice(0, target);
  S.game.redo = line.slice(target).reverse();
  S.browsing = S.game.redo.length > 0;
  setLastMove(target ? line[target - 1] : null);
  refreshGame();
}

function downloadPdn() {
  if (!S.record) return;
  const blob = new Blob([S.record.pdn], {type: "application/x-chess-pdn"});
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = "game.pdn";
  document.body.appendChild(link);
  link.click();
  setTimeout(() => { URL.revokeObjectURL(link.href); link.remove(); }, 1000);
}

function renderPlayInfo() {
  if (!S.game || !S.record) return;
  const names = playerNames(S.game);
  $("players").textContent = `Black: ${names.black} — White: ${names.white}`;
  const r = S.record;
  $("rule-text").textContent = `Move rule ${r.rule}: ${r.counter} of ${r.limit} quiet plies (${zeroingWords(r.rule)} resets it)`;
  $("rule-progress").max = r.limit;
  $("rule-progress").value = r.counter;
  $("thinking").hidden = !S.thinking;
  if (S.thinking) $("thinking-text").textContent = `Computer (${S.thinking.strength}) is thinking…`;
  $("game-over").hidden = !r.outcome;
  $("game-over").textContent = r.outcome ? `${r.outcome.text} — ${r.outcome.result}` : "";
  $("undo").disabled = S.game.moves.length <= S.game.fixed && !S.game.end;
  $("redo").disabled = !S.game.redo.length || !!S.thinking || !!S.game.end;
  $("engine-note").hidden = !S.lastEngine;
  if (S.lastEngine) {
    const how = S.lastEngine.source === "tables" ? "from the tables" : S.lastEngine.source === "forced" ? "its only move" : "by search";
    $("engine-note").textContent = `Computer played ${S.lastEngine.move} after ${S.lastEngine.seconds.toFixed(2)} s (${how})`;
  }
  $("hint-text").hidden = !S.hint;
  for (const id of ["hint", "resign", "offer-draw"]) $(id).disabled = !!r.outcome || !!S.thinking;
  $("hint").disabled = !humanToMove() || !!S.thinking;
  const line = fullLine();
  $("browsing").hidden = !S.browsing;
  if (S.browsing) {
    $("browsing").textContent = `Showing the position after ${S.game.moves.length} of ${line.length} moves: `
      + "→ or a click on a later move steps on; a move played here starts a new line from this position.";
  }
  renderMoveList();
  renderSideLines();
  renderReview();
}

function renderMoveList() {
  const list = $("move-list");
  list.innerHTML = "";
  const moves = fullLine();
  const shown = S.game.moves.length;
  const marks = reviewMarks();
  const blackFirst = turnOfFen(S.game.startFen) === "black";
  let index = 0;
  let number = 1;
  while (index < moves.length) {
    const item = document.createElement("li");
    item.value = number;
    const cells = [];
    if (index === 0 && !blackFirst) cells.push(null);
    while (cells.length < 2 && index < moves.length) cells.push(index++);
    for (const i of cells) {
      const span = document.createElement("span");
      span.className = "move";
      if (i === null) { span.textContent = "…"; } else {
        span.textContent = moves[i];
        span.dataset.ply = String(i + 1);
        if (i < S.game.fixed) span.classList.add("fixed");
        else {
          span.tabIndex = 0;
          span.setAttribute("role", "button");
          span.title = `Show the position after ${moves[i]}`;
          span.addEventListener("click", () => jumpTo(i + 1));
        }
        if (i === shown - 1) span.classList.add("current");
        if (i >= shown) span.classList.add("future");
        const mistake = marks.get(i + 1);
        if (mistake) {
          span.classList.add("mistake");
          span.title = `${mistake.mover} ${mistake.kind}: ${mistake.before} → ${mistake.after}; best was ${mistake.best}`;
        }
      }
      item.appendChild(span);
    }
    list.appendChild(item);
    number++;
  }
  if (S.record && S.record.outcome && shown === moves.length) {
    const item = document.createElement("li");
    item.className = "game-result";
    item.textContent = S.record.outcome.result;
    list.appendChild(item);
  }
}

// --- explore -----------------------------------------------------------------

async function loadExplore({fen, counter, pushHistory = true, lastMove = null, move = null}) {
  const e = S.explore;
  const seq = ++e.seq;
  const params = {fen, rule: e.rule, counter: String(counter)};
  if (move) params.moves = move;
  const moves = await api("/api/moves", params);
  if (seq !== e.seq) return false;
  if (!moves.ok) {
    showError("explore-error", moves.data.error);
    renderAll();  // the counter box shows the position's counter again, not the refused one
    return false;
  }
  const record = moves.data;
  const probe = await api("/api/probe", {fen: record.fen, rule: e.rule, counter: String(record.counter)});
  if (seq !== e.seq) return false;
  showError("explore-error", probe.status === 400 ? probe.data.error : "");
  if (pushHistory && e.record) {
    e.back.push({fen: e.fen, counter: e.counter, lastMove: e.lastMove, move: move || null});
    e.forward = [];
  }
  e.fen = record.fen;
  e.counter = record.counter;
  e.record = record;
  e.lastMove = lastMove;
  e.probe = probe.ok ? probe.data : null;
  e.missing = probe.status === 404 ? probe.data : null;
  e.hover = null;
  S.selection = null;
  closeRoutes();
  analyse();
  renderAll();
  return true;
}

// Seconds the engine searches a position of the explorer outside the tables.
const ANALYSIS_SECONDS = 2;

/** Ask the engine for the score and line of the explorer's position when the tables do not hold it
 *  (and stop the search of the position shown before). */
function analyse() {
  const e = S.explore;
  const wanted = S.view === "explore" && e.record && !e.record.outcome && e.missing && S.info && S.info.engines;
  if (e.analysis && (!wanted || e.analysis.fen !== e.fen || e.analysis.rule !== e.rule
                     || e.analysis.counter !== e.counter)) stopAnalysis();
  if (!wanted || e.analysis) return;
  const analysis = {fen: e.fen, rule: e.rule, counter: e.counter, state: "searching", data: null, error: "",
                    game: "x" + newGameId(), controller: new AbortController()};
  e.analysis = analysis;
  api("/api/analysis", null, {fen: e.fen, rule: e.rule, counter: e.counter, time: ANALYSIS_SECONDS,
                              game: analysis.game}, analysis.controller.signal).then((answer) => {
    if (e.analysis !== analysis || answer.aborted) return;
    analysis.state = answer.ok ? "done" : "error";
    analysis.data = answer.ok ? answer.data : null;
    analysis.error = answer.ok ? "" : answer.data.error;
    if (S.view === "explore") renderExplore();
  });
}

/** Stop the engine's search of the explorer's position: the request is aborted and its search cancelled. */
function stopAnalysis() {
  const analysis = S.explore.analysis;
  S.explore.analysis = null;
  if (!analysis || analysis.state !== "searching") return;
  analysis.controller.abort();
  api("/api/engine-cancel", null, {game: analysis.game});
}

/** The engine's score and line, under the tables' answer (which says the tables do not hold it). */
function renderAnalysis() {
  const e = S.explore;
  const box = $("explore-analysis");
  const analysis = e.analysis;
  box.hidden = !analysis;
  box.dataset.state = analysis ? analysis.state : "";
  if (!analysis) return;
  const score = $("explore-score");
  const line = $("explore-pv");
  line.innerHTML = "";
  score.className = "";
  if (analysis.state === "searching") { score.textContent = "Engine (hard) searching…"; return; }
  if (analysis.state === "error") { score.textContent = `Engine: no answer (${analysis.error})`; return; }
  const a = analysis.data;
  const how = a.source === "forced" ? "forced moves" : `depth ${a.depth}, ${a.seconds.toFixed(1)} s`;
  score.textContent = `Engine (hard): ${a.score_text} (${how})`;
  score.dataset.score = a.score === null ? "" : String(a.score);
  if (a.winner) score.className = a.winner === e.record.turn ? "value-win" : "value-loss";
  const label = document.createElement("span");
  label.textContent = "Expected line: ";
  line.appendChild(label);
  const blackFirst = a.turn === "black";
  a.pv.forEach((move, index) => {
    const ply = index + (blackFirst ? 0 : 1);
    if (ply % 2 === 0 || index === 0) {
      const number = document.createElement("span");
      number.className = "pv-number";
      number.textContent = `${Math.floor(ply / 2) + 1}.${ply % 2 ? ".." : ""} `;
      line.appendChild(number);
    }
    const link = document.createElement("span");
    link.className = "move pv-move";
    link.textContent = move;
    link.tabIndex = 0;
    link.setAttribute("role", "button");
    link.title = `Play the line up to ${move}`;
    link.addEventListener("click", () => exploreReplay(a.pv.slice(0, index + 1)));
    line.appendChild(link);
    line.appendChild(document.createTextNode(" "));
  });
}

function exploreMove(move) {
  loadExplore({fen: S.explore.fen, counter: S.explore.counter, move: move.move, lastMove: move.path});
}

function exploreBest() {
  const p = S.explore.probe;
  if (!p || !p.moves.length || !S.explore.record) return;
  const best = S.explore.record.moves.find((m) => m.move === p.moves[0].move);
  if (best) exploreMove(best);
}

/** Step through the explorer's history: to the last position of `from`, keeping this one in `to`. */
function exploreStep(from, to) {
  const e = S.explore;
  if (!e[from].length) return;
  const target = e[from].pop();
  // the move between the two positions goes with the one kept (back: from it; forward: into it)
  e[to].push({fen: e.fen, counter: e.counter, lastMove: e.lastMove, move: target.move});
  loadExplore({fen: target.fen, counter: target.counter, lastMove: target.lastMove, pushHistory: false});
}

/** The explorer's line for the URL: the position it starts from (after the last FEN typed or opened)
 *  and the moves played from there to the position shown. */
function exploreLine() {
  const e = S.explore;
  let first = e.back.length;
  while (first > 0 && e.back[first - 1].move) first--;
  const root = first < e.back.length ? e.back[first] : {fen: e.fen, counter: e.counter};
  return {root, line: e.back.slice(first).map((entry) => entry.move)};
}

/** Play a line of moves in the explorer, one after another; false (and the problem shown) at one
 *  that is not legal. */
async function exploreReplay(line) {
  for (const text of line) {
    const record = S.explore.record;
    const move = record && findMove(record, text);
    if (!move) {
      showError("explore-error", `The link's line stops at ${text}: not a legal move in ${record ? record.fen : "no position"}.`);
      return false;
    }
    if (!(await loadExplore({fen: S.explore.fen, counter: S.explore.counter, move: move.move, lastMove: move.path}))) return false;
  }
  return true;
}

const exploreBack = () => exploreStep("back", "forward");
const exploreForward = () => exploreStep("forward", "back");

/** The colour class and the words of a move's or position's value.
 *  With the move-rule layer (outcome, category, dtz in the answer) the result under the rule
 *  from the counter leads, and a win or loss the rule turns into a draw is told apart;
 *  without it, the value without the rule and its DTW. */
function describe(entry) {
  const value = entry.value;
  const ruled = !!entry.outcome;
  const outcome = ruled ? entry.outcome : value;
  let cls = outcome;
  let words;
  const known = entry.dtw !== undefined && entry.dtw !== null;  // compact files hold no DTW
  if (outcome === "win") words = ruled || !known ? "wins" : `wins in ${plies(entry.dtw)}`;
  else if (outcome === "loss") words = ruled || !known ? "loses" : `loses in ${plies(entry.dtw)}`;
  else if (value === "win") { cls = "cursed-win"; words = "draws by the move rule (a win without it)"; }
  else if (value === "loss") { cls = "blessed-loss"; words = "draws by the move rule (a loss without it)"; }
  else words = "draws";
  const distance = [];
  if (entry.dtz !== undefined && entry.dtz !== null && value !== "draw") distance.push(`DTZ ${plies(entry.dtz)}`);
  if (value !== "draw" && known) distance.push(`DTW ${plies(entry.dtw)}`);
  if (entry.category && entry.category !== outcome && entry.category !== cls) distance.push(entry.category);
  return {cls: `value-${cls}`, words, distance: distance.join(" · ")};
}

function renderExplore() {
  const e = S.explore;
  const result = $("explore-result");
  const tbody = document.querySelector("#explore-moves tbody");
  tbody.innerHTML = "";
  $("explore-rule").value = e.rule;
  $("explore-counter").value = e.counter;
  const limit = S.info ? S.info.rules[e.rule].limit : 80;
  $("explore-counter").max = limit;
  $("explore-limit").textContent = `of ${limit} quiet plies`;
  $("dtz-help").textContent = zeroingWords(e.rule).slice(2);
  if (e.record && document.activeElement !== $("explore-fen")) $("explore-fen").value = e.fen;
  $("explore-back").disabled = !e.back.length;
  $("explore-best").disabled = !(e.probe && e.probe.moves.length);
  $("explore-forward").disabled = !e.forward.length;
  $("explore-outside").hidden = !e.missing;
  renderAnalysis();
  result.className = "result";
  result.removeAttribute("data-value");
  $("explore-distance").textContent = "";
  if (!e.record) { result.textContent = ""; return; }
  const side = capital(e.record.turn);
  if (e.record.outcome) {
    result.textContent = e.record.outcome.text;
    result.classList.add(e.record.outcome.winner === null ? "value-draw"
      : e.record.outcome.winner === e.record.turn ? "value-win" : "value-loss");
  } else if (e.probe) {
    const d = describe(e.probe);
    const rule = e.probe.outcome ? ` under ${e.probe.rule} from counter ${e.probe.counter}`
      : e.probe.rule_layer_missing ? ` without the move rule (${e.probe.rule} ignored)` : "";
    result.textContent = `${side} to move ${d.words}${rule}`;
    result.classList.add(d.cls);
    result.dataset.value = e.probe.value;
    const parts = [];
    if (e.probe.dtz !== undefined && e.probe.dtz !== null && e.probe.value !== "draw") {
      parts.push(`DTZ ${plies(e.probe.dtz)} to the next ${zeroingWords(e.probe.rule).slice(2)} that keeps the result under ${e.probe.rule}`);
    }
    if (e.probe.value === "draw") parts.push("a draw without the move rule too");
    else if (e.probe.dtw !== null) {
      parts.push(`DTW ${plies(e.probe.dtw)} to the end of the game with perfect play, without the move rule`);
    }
    if (e.probe.category) parts.push(`category at counter 0: ${e.probe.category}`);
    if (e.probe.rule_layer_missing) {
      parts.push(e.probe.note || `these tables have no ${e.probe.rule} layer: the result shown is without the move rule`);
    }
    $("explore-distance").textContent = parts.join(" · ");
  } else if (e.missing) {
    result.textContent = `${side} to move — outside the tables`;
    result.classList.add("value-unknown");
    const have = e.missing.max_pieces;
    if (e.missing.rule_layer_missing) {
      result.textContent = `${side} to move — no ${e.rule} layer in these tables`;
      $("explore-outside").textContent = `The tables here have no layer for the ${e.rule} move rule (built before `
        + `rule layers existed, or without that preset): rebuild them with egtb build, or choose another rule. `
        + `(${e.missing.error})`;
    } else {
      $("explore-outside").textContent = `This position has ${e.missing.piece_count} pieces; the tables here are `
        + `complete up to ${have} pieces${have ? "" : " (none are built: run egtb build)"}, so it cannot be looked up `
        + `(${e.missing.error.split(" in ")[0]}).`;
    }
  }
  const rows = e.probe ? e.probe.moves
    : e.missing && e.missing.moves ? e.missing.moves : e.record.moves.map((m) => ({move: m.move}));
  rows.forEach((row, index) => {
    const move = e.record.moves.find((m) => m.move === row.move);
    const tr = document.createElement("tr");
    tr.className = "move-row";
    tr.dataset.move = row.move;
    const cells = [row.move, "", ""];
    if (row.value !== undefined && row.value !== null) {
      const d = describe(row);
      tr.classList.add(d.cls);
      tr.dataset.value = row.value;
      cells[1] = capital(d.words);
      cells[2] = d.distance;
      if (index === 0 && e.probe) tr.classList.add("best");
    } else {
      cells[1] = "not in the tables";
    }
    for (const text of cells) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.appendChild(td);
    }
    if (move) {
      tr.addEventListener("mouseenter", () => { e.hover = {...move, best: index === 0 && !!e.probe}; renderBoard(); });
      tr.addEventListener("mouseleave", () => { e.hover = null; renderBoard(); });
      tr.addEventListener("click", () => exploreMove(move));
    }
    tbody.appendChild(tr);
  });
}

// --- edit ------------------------------------------------------------------

const CROWN_ROW = {b: [29, 30, 31, 32], w: [1, 2, 3, 4]};

function editFen() {
  const list = (colour) => Object.entries(S.edit.pieces)
    .filter(([, kind]) => kind.toLowerCase() === colour)
    .map(([square, kind]) => [Number(square), kind === kind.toUpperCase()])
    .sort((a, b) => a[0] - b[0])
    .map(([square, king]) => (king ? "K" : "") + square).join(",");
  return `${S.edit.turn === "black" ? "B" : "W"}:W${list("w")}:B${list("b")}`;
}

function editPlace(square) {
  const tool = S.edit.tool;
  let note = "";
  if (tool === "x" || S.edit.pieces[square] === tool) {
    delete S.edit.pieces[square];
  } else if ((tool === "b" || tool === "w") && CROWN_ROW[tool].includes(square)) {
    const colour = tool === "b" ? "black" : "white";
    note = `No ${colour} man can stand on ${square}: it would have been crowned there. `
      + `Choose the ${colour} king to place one.`;
  } else {
    S.edit.pieces[square] = tool;
  }
  editChanged(note);
}

function editSetFromRecord(record, turn) {
  S.edit.pieces = piecesOf(record);
  S.edit.turn = turn || (record ? record.turn : "black");
}

async function editChanged(note) {
  const fen = editFen();
  $("edit-fen").value = fen;
  document.querySelector(`input[name=edit-turn][value=${S.edit.turn}]`).checked = true;
  renderAll();
  const seq = ++S.edit.seq;
  const answer = await api("/api/moves", {fen});
  if (seq !== S.edit.seq) return;
  if (!answer.ok) {
    $("edit-check").textContent = "";
    showError("edit-error", answer.data.error);
    return;
  }
  showError("edit-error", "");
  const r = answer.data;
  const state = r.outcome ? r.outcome.text : `${capital(r.turn)} to move, ${r.moves.length} legal move${r.moves.length === 1 ? "" : "s"}`
    + (r.capture ? " (a capture is compulsory)" : "");
  $("edit-check").textContent = `${r.piece_count} pieces. ${state}.` + (note ? " " + note : "");
}

async function editLoadFen(fen) {
  const answer = await api("/api/moves", {fen});
  if (!answer.ok) { showError("edit-error", answer.data.error); return; }
  editSetFromRecord(answer.data);
  editChanged("");
}

async function editTo(view) {
  const fen = editFen();
  const answer = await api("/api/moves", {fen});
  if (!answer.ok) { showError("edit-error", answer.data.error); return; }
  if (view === "explore") {
    S.explore.back = [];
    S.explore.forward = [];
    S.explore.record = null;
    setView("explore");
    await loadExplore({fen, counter: 0, pushHistory: false});
  } else {
    playFrom(fen);
  }
}

/** Start a game from a position of the explorer or the editor: the user plays the side to move there
 *  (the position was set up to be played from, not to watch the computer answer it). */
function playFrom(fen, {rule = $("rule").value, counter = 0} = {}) {
  document.querySelector("input[name=start][value=fen]").checked = true;
  $("human").value = turnOfFen(fen);
  $("start-fen").value = fen;
  $("rule").value = rule;
  setStartCounterLimit();
  $("start-counter").value = String(Math.min(counter, limitOf(rule)));
  $("new-game-box").open = true;
  setView("play");
  startGame(readNewGameForm());
}

// --- views and status ------------------------------------------------------------

/** Show a view; entering the editor copies the position of the view left (unless keepEdit). */
function setView(view, {keepEdit = false} = {}) {
  const from = S.view;
  S.view = view;
  S.selection = null;
  closeRoutes();
  for (const panel of document.querySelectorAll(".panel")) panel.hidden = panel.dataset.view !== view;
  for (const tab of document.querySelectorAll("#tabs button")) {
    tab.setAttribute("aria-selected", String(tab.dataset.view === view));
  }
  if (view === "edit") {
    if (!keepEdit && from !== "edit") editSetFromRecord(from === "explore" ? S.explore.record : S.record);
    editChanged("");
  }
  analyse();  // the explorer's search stops when the view is left, and starts again when it comes back
  renderAll();
}

/** A tab clicked: the explorer, when it has no position yet, opens on the game's (or the start). */
function openView(view) {
  if (view !== "explore" || S.explore.record) { setView(view); return; }
  const record = S.record;
  S.explore.rule = record ? record.rule : "wcdf";
  setView("explore");
  loadExplore({fen: record ? record.fen : START_FEN, counter: record ? record.counter : 0, pushHistory: false});
}

/** The start-counter field goes up to the chosen preset's limit (40 under forty-plies). */
function setStartCounterLimit() {
  const limit = limitOf($("rule").value);
  $("start-counter").max = String(limit);
  if (Number($("start-counter").value) > limit) $("start-counter").value = String(limit);
}

/** Thinking time matters to hard (and perfect outside the tables); easy and medium search to a fixed depth. */
function renderTimeMenu() {
  const opponent = $("opponent").value;
  const timed = opponent === "hard" || opponent === "perfect";
  $("think-time").disabled = !timed;
  $("think-note").textContent = opponent === "hotseat" ? "" : timed ? "how long the computer searches each move"
    : `${opponent} searches to a fixed depth and answers at once`;
}

/** Offer only the strengths the server can play ("perfect" needs tables). */
function fillStrengths() {
  for (const option of $("opponent").options) {
    if (option.value === "hotseat" || S.info.strengths.includes(option.value)) continue;
    option.disabled = true;
    option.textContent += " — needs tables (egtb build)";
  }
  if ($("opponent").selectedOptions[0].disabled) $("opponent").value = "hard";
}

function renderStatus() {
  const status = $("status");
  if (status.dataset.flash) return;
  let text = "";
  if (S.view === "edit") {
    text = `Setting up: ${capital(S.edit.turn)} to move`;
  } else {
    const record = currentRecord();
    if (!record) text = "";
    else if (record.outcome) text = record.outcome.text;
    else if (S.view === "play" && S.thinking) text = `${capital(record.turn)} (computer, ${S.thinking.strength}) is thinking…`;
    else {
      text = `${capital(record.turn)} to move`;
      if (S.view === "play" && S.game && S.game.opponent !== "hotseat") {
        text += record.turn === S.game.human ? " (you)" : " (computer)";
      }
      if (record.capture) text += " — a capture is compulsory";
    }
  }
  status.textContent = text;
  status.className = S.thinking && S.view === "play" ? "thinking" : "";
}

/** The FEN line, breakable only after its commas and colons: a square number is never cut in two. */
function showFen(fen) {
  const node = $("fen");
  if (node.textContent === fen) return;
  node.textContent = "";
  for (const part of fen.split(/(?<=[,:])/)) {
    node.appendChild(document.createTextNode(part));
    node.appendChild(document.createElement("wbr"));
  }
}

/** Copy text with a button, and say on the button whether it worked; where the clipboard refuses,
 *  the text is put in the node `shown` (the FEN line, or a box below the buttons) and selected, for Ctrl+C. */
async function copyText(button, text, shown) {
  const label = button.dataset.label || button.textContent;
  button.dataset.label = label;
  let done = false;
  try {
    if (navigator.clipboard) { await navigator.clipboard.writeText(text); done = true; }
  } catch (error) { done = false; }
  if (!done) {
    if (shown.tagName === "TEXTAREA") { shown.hidden = false; shown.value = text; shown.select(); } else {
      const range = document.createRange();
      range.selectNodeContents(shown);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
    }
  }
  button.textContent = done ? "Copied" : "Not copied: selected, press Ctrl+C";
  button.dataset.copied = done ? "yes" : "no";
  clearTimeout(button.copyTimer);
  button.copyTimer = setTimeout(() => { button.textContent = label; delete button.dataset.copied; }, 2000);
}

const copyFen = () => copyText($("copy-fen"), $("fen").textContent, $("fen"));
const copyLink = () => copyText($("copy-link"), location.href, $("copy-box"));
const copyPdn = () => { if (S.record) copyText($("copy-pdn"), S.record.pdn, $("copy-box")); };

// --- review, replay and typed moves --------------------------------------------

/** What a review is of: the game's start, rule, counter and whole line. */
function reviewKey() {
  return S.game ? [S.game.startFen, S.game.rule, S.game.counter, fullLine().join(" ")].join("|") : "";
}

/** The review's mistakes by ply, when the review is of the line shown (else none). */
function reviewMarks() {
  const marks = new Map();
  if (S.review && S.review.key === reviewKey()) for (const m of S.review.data.mistakes) marks.set(m.ply, m);
  return marks;
}

/** "Review": the tables' verdict on each move of the line (GET /api/review). */
async function reviewGame() {
  if (!S.game) return;
  const key = reviewKey();
  const line = fullLine();
  const button = $("review");
  button.disabled = true;
  const answer = await api("/api/review", {fen: S.game.startFen, moves: line.join(" "), rule: S.game.rule,
                                           counter: String(S.game.counter)});
  button.disabled = false;
  if (!answer.ok) { showError("play-error", answer.data.error); return; }
  S.review = {key, data: answer.data};
  renderAll();
}

function renderReview() {
  const box = $("review-text");
  const current = S.review && S.review.key === reviewKey();
  box.hidden = !current;
  if (!current) return;
  const r = S.review.data;
  const line = fullLine();
  if (r.entered === null) {
    box.textContent = `Review: the game never reached the tables (they hold up to ${S.info.max_pieces} pieces), `
      + "so no move can be judged.";
    return;
  }
  const where = r.entered === 0 ? "at its start" : `after ply ${r.entered} (${line[r.entered - 1]})`;
  const said = r.mistakes.map((m) => `${m.label} ${m.move} (${m.mover}) ${m.kind}: ${m.before} → ${m.after}, best ${m.best}`);
  box.textContent = `Review: the game entered the tables ${where}, where ${sideWords(r.entered_value, r.entered_fen)}. `
    + (said.length ? `${said.length} move${said.length === 1 ? "" : "s"} threw a result away: ${said.join("; ")}.`
      : "No move threw away a win or a draw.");
}

/** "Black wins", "White wins" or "it is a draw", from the value of the side to move in `fen`. */
function sideWords(value, fen) {
  const side = turnOfFen(fen);
  if (value === "draw") return "it is a draw";
  return `${capital(value === "win" ? side : other(side))} wins`;
}

/** "Replay": the pasted PDN game or move list becomes a hot-seat game shown at its start, its moves
 *  ahead to step through (→, or a click on a move). */
async function replayPasted() {
  const answer = await api("/api/pdn", undefined, {text: $("paste-pdn").value});
  if (!answer.ok) { showError("paste-error", answer.data.error); return; }
  showError("paste-error", "");
  const g = answer.data;
  const game = {startFen: g.fen, fixed: 0, moves: [], redo: [...g.moves].reverse(), event: g.headers.Event || "Replayed game",
                rule: $("rule").value, counter: 0, opponent: "hotseat", human: "black", time: Number($("think-time").value)};
  if (await startGame(game)) $("replay-box").open = false;
}

/** A legal move of `record` written `text`: its notation, or the squares of one of its routes, or (when
 *  only one move fits) just its start and end. */
function findMove(record, text) {
  const exact = record.moves.find((m) => m.move === text);
  if (exact) return exact;
  const squares = text.split(/[-x]/).map(Number);
  const routed = record.moves.filter((m) => (m.routes || [m.path]).some((r) => r.join() === squares.join()));
  if (routed.length === 1) return routed[0];
  const ends = record.moves.filter((m) => m.from === squares[0] && m.to === squares[squares.length - 1]);
  return ends.length === 1 ? ends[0] : null;
}

/** Keyboard move entry: digits, "-" and "x" build a move, Backspace takes one back, Enter plays it,
 *  Escape drops it. True when the key was taken. */
function typeMoveKey(event) {
  if (S.view === "edit") return false;
  const key = event.key;
  if (/^[0-9x-]$/.test(key)) S.typed += key;
  else if (key === "Backspace" && S.typed) S.typed = S.typed.slice(0, -1);
  else if (key === "Escape" && S.typed) S.typed = "";
  else if (key === "Enter" && S.typed) { event.preventDefault(); playTyped(); return true; }
  else return false;
  event.preventDefault();
  renderTyped();
  return true;
}

function renderTyped() {
  $("move-entry").hidden = !S.typed;
  $("move-entry-text").textContent = S.typed;
}

function playTyped() {
  const text = S.typed;
  S.typed = "";
  renderTyped();
  const record = currentRecord();
  if (!record || !canChooseMove()) { flashStatus(`${text}: it is not your move`); return; }
  const move = findMove(record, text);
  if (!move) {
    const several = record.moves.filter((m) => m.from === Number(text.split(/[-x]/)[0])
      && m.to === Number(text.split(/[-x]/).pop()));
    if (several.length > 1) { S.selection = {from: several[0].from, prefix: [several[0].from]}; offerRoutes(several); return; }
    flashStatus(`${text} is not a legal move here`);
    return;
  }
  playChosen(move);
}

function renderAll() {
  const record = currentRecord();
  showFen(S.view === "edit" ? editFen() : record ? record.fen : "");
  $("numbers").checked = S.numbers;
  for (const tool of document.querySelectorAll(".tool")) {
    tool.setAttribute("aria-pressed", String(tool.dataset.tool === S.edit.tool));
  }
  if (S.view === "play") renderPlayInfo();
  if (S.view === "explore") renderExplore();
  renderStatus();
  renderBoard();
  updateUrl();
}

// --- start-up ------------------------------------------------------------------

function fillRuleSelects() {
  for (const select of document.querySelectorAll(".rule-select")) {
    select.innerHTML = "";
    for (const [name, rule] of Object.entries(S.info.rules)) {
      const option = document.createElement("option");
      option.value = name;
      option.textContent = `${name} (${rule.limit} plies)`;
      select.appendChild(option);
    }
  }
}

function fillBallots() {
  const select = $("ballot");
  select.innerHTML = "";
  S.ballots.forEach((ballot, index) => {
    const option = document.createElement("option");
    option.value = String(index);
    option.textContent = `${ballot.name}: ${ballot.moves.join(" ")}`;
    select.appendChild(option);
  });
  select.addEventListener("change", () => { document.querySelector("input[name=start][value=ballot]").checked = true; });
}

function bindControls() {
  svg = BoardView.create($("board"));
  svg.addEventListener("click", onBoardClick);
  for (const tab of document.querySelectorAll("#tabs button")) {
    tab.addEventListener("click", () => { showLinkProblems([]); openView(tab.dataset.view); });
  }
  $("flip").addEventListener("click", () => { S.flipped = !S.flipped; renderAll(); });
  $("numbers").addEventListener("change", () => { S.numbers = $("numbers").checked; renderAll(); });
  $("copy-fen").addEventListener("click", copyFen);
  $("copy-link").addEventListener("click", copyLink);
  $("copy-pdn").addEventListener("click", copyPdn);
  $("review").addEventListener("click", reviewGame);
  $("paste-replay").addEventListener("click", replayPasted);
  $("new-game").addEventListener("submit", (event) => {
    event.preventDefault();
    showLinkProblems([]);
    startGame(readNewGameForm());
  });
  $("start-fen").addEventListener("input", () => { document.querySelector("input[name=start][value=fen]").checked = true; });
  $("undo").addEventListener("click", undo);
  $("hint").addEventListener("click", hint);
  $("resign").addEventListener("click", resign);
  $("offer-draw").addEventListener("click", offerDraw);
  $("rule").addEventListener("change", setStartCounterLimit);
  $("opponent").addEventListener("change", renderTimeMenu);
  $("explore-fen-form").addEventListener("submit", (event) => {
    event.preventDefault();
    loadExplore({fen: $("explore-fen").value.trim(), counter: 0, pushHistory: true});
  });
  svg.addEventListener("pointerdown", onPointerDown);
  svg.addEventListener("pointermove", onPointerMove);
  svg.addEventListener("pointerup", onPointerUp);
  svg.addEventListener("pointercancel", () => { S.drag = null; renderBoard(); });
  $("redo").addEventListener("click", redo);
  $("download-pdn").addEventListener("click", downloadPdn);
  $("route-cancel").addEventListener("click", () => { closeRoutes(); S.selection = null; renderBoard(); });
  $("to-explore").addEventListener("click", () => {
    if (!S.record) return;
    S.explore.rule = S.record.rule;
    S.explore.back = []; S.explore.forward = []; S.explore.record = null;
    setView("explore");
    loadExplore({fen: S.record.fen, counter: S.record.counter, pushHistory: false});
  });
  $("explore-best").addEventListener("click", exploreBest);
  $("explore-back").addEventListener("click", exploreBack);
  $("explore-forward").addEventListener("click", exploreForward);
  $("explore-play").addEventListener("click", () => playFrom(S.explore.fen, {rule: S.explore.rule, counter: S.explore.counter}));
  $("explore-rule").addEventListener("change", () => {
    S.explore.rule = $("explore-rule").value;
    loadExplore({fen: S.explore.fen, counter: Math.min(S.explore.counter, S.info.rules[S.explore.rule].limit),
                 pushHistory: false, lastMove: S.explore.lastMove});
  });
  $("explore-counter").addEventListener("change", () => {
    loadExplore({fen: S.explore.fen, counter: Number($("explore-counter").value) || 0, pushHistory: false,
                 lastMove: S.explore.lastMove});
  });
  for (const tool of document.querySelectorAll(".tool")) {
    tool.addEventListener("click", () => { S.edit.tool = tool.dataset.tool; renderAll(); });
  }
  for (const radio of document.querySelectorAll("input[name=edit-turn]")) {
    radio.addEventListener("change", () => { S.edit.turn = radio.value; editChanged(""); });
  }
  $("edit-clear").addEventListener("click", () => { S.edit.pieces = {}; editChanged(""); });
  $("edit-start").addEventListener("click", () => editLoadFen(START_FEN));
  $("edit-fen-form").addEventListener("submit", (event) => { event.preventDefault(); editLoadFen($("edit-fen").value); });
  $("edit-explore").addEventListener("click", () => editTo("explore"));
  $("edit-play").addEventListener("click", () => editTo("play"));
  document.addEventListener("keydown", onKey);
}

function onKey(event) {
  // Ctrl+F, Alt+Left and the like are the browser's: the page takes plain keys only
  if (event.ctrlKey || event.altKey || event.metaKey) return;
  const target = event.target;
  if (target && (target.tagName === "INPUT" || target.tagName === "SELECT" || target.tagName === "TEXTAREA")) return;
  if (event.key === "Enter" && target && target.dataset && target.dataset.ply && !S.typed) {
    event.preventDefault();
    jumpTo(Number(target.dataset.ply));  // a move of the list, reached with Tab
    return;
  }
  if (typeMoveKey(event)) return;
  if (event.key === "Escape") { closeRoutes(); S.selection = null; renderBoard(); return; }
  if (event.key === "f") { S.flipped = !S.flipped; renderAll(); return; }
  if (S.view === "explore") {
    if (event.key === " " || event.key === "b") { event.preventDefault(); exploreBest(); }
    else if (event.key === "ArrowLeft") { event.preventDefault(); exploreBack(); }
    else if (event.key === "ArrowRight") { event.preventDefault(); exploreForward(); }
  } else if (S.view === "play") {
    if (event.key === "ArrowLeft") { event.preventDefault(); undo(); }
    else if (event.key === "ArrowRight") { event.preventDefault(); redo(); }
    else if (event.key === "Home") { event.preventDefault(); jumpTo(0); }
    else if (event.key === "End") { event.preventDefault(); jumpTo(fullLine().length); }
  }
}

/** The link's settings, checked: each bad parameter is named in `problems` and replaced by its default. */
function readLink(params) {
  const problems = [];
  const given = (name) => params.has(name) && params.get(name) !== "";
  const bad = (name, why, instead) => problems.push(`${name}=${JSON.stringify(params.get(name))} ${why}: ${instead} instead`);
  const link = {fen: params.get("fen"), moves: (params.get("moves") || "").split(/[\s,]+/).filter(Boolean)};
  link.view = params.get("view") || "play";
  if (!["play", "explore", "edit"].includes(link.view)) {
    bad("view", "is not play, explore or edit", "play");
    link.view = "play";
  }
  link.rule = params.get("rule") || "wcdf";
  if (!S.info.rules[link.rule]) {
    bad("rule", `is not one of ${Object.keys(S.info.rules).join(", ")}`, "wcdf");
    link.rule = "wcdf";
  }
  link.counter = 0;
  if (given("counter")) {
    const limit = limitOf(link.rule);
    if (/^\d+$/.test(params.get("counter")) && Number(params.get("counter")) <= limit) link.counter = Number(params.get("counter"));
    else bad("counter", `is not a whole number from 0 to ${limit} (the ${link.rule} limit)`, "0");
  }
  link.fixed = 0;
  if (given("fixed")) {
    if (/^\d+$/.test(params.get("fixed")) && Number(params.get("fixed")) <= link.moves.length) link.fixed = Number(params.get("fixed"));
    else bad("fixed", `is not a number of moves from 0 to ${link.moves.length} (the moves given)`, "0");
  }
  link.line = (params.get("line") || "").split(/[\s,]+/).filter(Boolean);
  link.at = link.moves.length;
  if (given("at")) {
    if (/^\d+$/.test(params.get("at")) && Number(params.get("at")) <= link.moves.length) link.at = Number(params.get("at"));
    else bad("at", `is not a number of moves from 0 to ${link.moves.length} (the moves given)`, String(link.moves.length));
  }
  if (link.view !== "play") return {link, problems};
  const offered = [...$("opponent").options].filter((o) => !o.disabled).map((o) => o.value);
  link.opponent = null;
  if (given("opponent")) {
    if (offered.includes(params.get("opponent"))) link.opponent = params.get("opponent");
    else bad("opponent", `is not one of ${offered.join(", ")}`, $("opponent").value);
  }
  link.human = "black";
  if (given("human")) {
    if (["black", "white"].includes(params.get("human"))) link.human = params.get("human");
    else bad("human", "is not black or white", "black");
  }
  link.time = null;
  if (given("time")) {
    const most = S.info.max_seconds || 60;
    const seconds = /^\d*\.?\d+$/.test(params.get("time")) ? Number(params.get("time")) : NaN;
    if (seconds > 0 && seconds <= most) link.time = seconds;
    else bad("time", `is not a number of seconds above 0 and at most ${most}`, `${$("think-time").value} s`);
  }
  return {link, problems};
}

/** Name the link's bad parameters above the board (until another game, position or view is chosen). */
function showLinkProblems(problems) {
  showError("link-error", problems.length ? `This link's ${problems.join("; ")}.` : "");
}

async function init() {
  bindControls();
  const [info, ballots] = await Promise.all([api("/api/info"), api("/api/ballots")]);
  if (!info.ok) return;  // the offline banner says why
  S.info = info.data;
  S.ballots = ballots.ok ? ballots.data["3-move"] : [];
  fillRuleSelects();
  fillBallots();
  fillStrengths();
  const params = new URLSearchParams(location.search);
  S.flipped = params.get("flip") === "1";
  S.numbers = params.get("numbers") === "1";
  const {link, problems} = readLink(params);
  const {fen, rule, counter} = link;
  if (link.view === "explore") {
    S.explore.rule = rule;
    setView("explore");
    showLinkProblems(problems);
    if (!(await loadExplore({fen: fen || START_FEN, counter, pushHistory: false}))) {
      const problem = $("explore-error").textContent;
      await loadExplore({fen: START_FEN, counter: 0, pushHistory: false});
      showError("explore-error", `The position in the link could not be explored (${problem}); the start position is shown instead.`);
      return;
    }
    if (link.line.length) await exploreReplay(link.line);
    return;
  }
  if (link.view === "edit") {
    const answer = await api("/api/moves", {fen: fen || START_FEN});
    editSetFromRecord(answer.ok ? answer.data : null);
    setView("edit", {keepEdit: true});
    showLinkProblems(problems);
    if (!answer.ok) {
      S.edit.seq++;  // the check of the empty board under way must not clear this message
      $("edit-fen").value = fen;
      showError("edit-error", answer.data.error);
    }
    return;
  }
  $("rule").value = rule;
  setStartCounterLimit();
  $("start-counter").value = String(counter);
  if (link.opponent) $("opponent").value = link.opponent;
  renderTimeMenu();
  $("human").value = link.human;
  if (link.time !== null) {
    const select = $("think-time");
    const value = String(link.time);
    if (![...select.options].some((o) => o.value === value)) select.add(new Option(`${value} s`, value));
    select.value = value;
  }
  const game = readNewGameForm();
  if (fen) { game.startFen = fen; game.event = "Game from a position"; }
  const moves = link.moves;
  if (moves.length) {
    game.moves = moves.slice(0, Math.max(link.at, link.fixed));
    game.redo = moves.slice(game.moves.length).reverse();
    game.fixed = link.fixed;
  }
  setView("play");
  showLinkProblems(problems);
  if (!(await startGame(game))) {
    const problem = $("play-error").textContent;
    await startGame(readNewGameForm());
    showError("play-error", `The game in the link could not be set up (${problem}); a new game starts instead.`);
  }
}

window.addEventListener("DOMContentLoaded", init);
