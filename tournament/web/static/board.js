// The draughts board as SVG: squares 1-32, pieces, highlights, move previews.
// Pure drawing: the page (app.js) decides what to show; the server decides what is legal.
"use strict";

const BoardView = (() => {
  const SVGNS = "http://www.w3.org/2000/svg";
  const CELL = 100;
  const CROWN = "M-20,9 L-24,-13 L-10,-2 L0,-18 L10,-2 L24,-13 L20,9 Z";

  /** Row (0-7 from Black's side) and column (0-7) of square 1-32, as egtb.rules.squares has them. */
  function squareToCoords(square) {
    const index = square - 1;
    const row = Math.floor(index / 4);
    return [row, 2 * (index % 4) + (row % 2 === 0 ? 1 : 0)];
  }

  function coordsToSquare(row, column) {
    if (row < 0 || row > 7 || column < 0 || column > 7 || (row + column) % 2 === 0) return null;
    return row * 4 + Math.floor(column / 2) + 1;
  }

  /** Centre of a square in SVG units; unflipped, White sits at the bottom. */
  function centre(square, flipped) {
    let [row, column] = squareToCoords(square);
    if (flipped) { row = 7 - row; column = 7 - column; }
    return [column * CELL + CELL / 2, row * CELL + CELL / 2];
  }

  function el(name, attrs, parent) {
    const node = document.createElementNS(SVGNS, name);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    if (parent) parent.appendChild(node);
    return node;
  }

  function create(container) {
    const svg = el("svg", {viewBox: `0 0 ${8 * CELL} ${8 * CELL}`, id: "board-svg", role: "img",
                           "aria-label": "draughts board"});
    container.appendChild(svg);
    return svg;
  }

  function drawDefs(svg) {
    const defs = el("defs", {}, svg);
    for (const [id, colour] of [["arrow-head", "#1565c0"], ["arrow-head-best", "#2e7d32"]]) {
      const marker = el("marker", {id, viewBox: "0 0 10 10", refX: "5", refY: "5", markerWidth: "3",
                                   markerHeight: "3", orient: "auto-start-reverse"}, defs);
      el("path", {d: "M0,0 L10,5 L0,10 Z", fill: colour}, marker);
    }
  }

  function drawSquares(svg, scene) {
    const layer = el("g", {class: "squares"}, svg);
    for (let row = 0; row < 8; row++) {
      for (let column = 0; column < 8; column++) {
        const dark = (row + column) % 2 === 1;
        const attrs = {x: column * CELL, y: row * CELL, width: CELL, height: CELL,
                       class: dark ? "square dark" : "square light"};
        if (dark) {
          const square = scene.flipped ? coordsToSquare(7 - row, 7 - column) : coordsToSquare(row, column);
          attrs.id = `sq-${square}`;
          attrs["data-square"] = square;
          const marks = [];
          if (scene.lastMove && scene.lastMove.includes(square)) marks.push("last");
          if (scene.selected === square) marks.push("selected");
          if (scene.targets && scene.targets.includes(square)) marks.push("target");
          if (scene.steps && scene.steps.includes(square)) marks.push("step");
          if (marks.length) attrs.class += " " + marks.join(" ");
        }
        el("rect", attrs, layer);
      }
    }
  }

  function drawNumbers(svg, scene) {
    const layer = el("g", {class: "numbers"}, svg);
    for (let square = 1; square <= 32; square++) {
      const [x, y] = centre(square, scene.flipped);
      const text = el("text", {x: x - CELL / 2 + 4, y: y - CELL / 2 + 16, class: "square-number"}, layer);
      text.textContent = String(square);
    }
  }

  function drawPieces(svg, scene) {
    const layer = el("g", {class: "pieces"}, svg);
    for (const [key, kind] of Object.entries(scene.pieces || {})) {
      const square = Number(key);
      const [x, y] = centre(square, scene.flipped);
      const colour = kind.toLowerCase() === "b" ? "black" : "white";
      const king = kind === kind.toUpperCase();
      const classes = ["piece", colour, king ? "king" : "man"];
      if (scene.mustCapture && scene.mustCapture.includes(square)) classes.push("must-capture");
      else if (scene.movable && scene.movable.includes(square)) classes.push("movable");
      if (scene.selected === square) classes.push("selected");
      if (scene.captured && scene.captured.includes(square)) classes.push("captured");
      const group = el("g", {id: `piece-${square}`, class: classes.join(" "), "data-square": square,
                             transform: `translate(${x},${y})`}, layer);
      el("circle", {r: 38, class: "piece-body"}, group);
      el("circle", {r: 28, class: "piece-ring"}, group);
      if (king) el("path", {d: CROWN, class: "crown"}, group);
    }
  }

  function drawCaptureMarks(svg, squares, flipped, layer) {
    for (const square of squares || []) {
      const [x, y] = centre(square, flipped);
      const mark = el("g", {class: "capture-mark", transform: `translate(${x},${y})`}, layer);
      el("line", {x1: -22, y1: -22, x2: 22, y2: 22}, mark);
      el("line", {x1: -22, y1: 22, x2: 22, y2: -22}, mark);
    }
  }

  function drawPreviews(svg, scene) {
    const layer = el("g", {class: "previews"}, svg);
    for (const preview of scene.previews || []) {
      const points = preview.path.map((s) => centre(s, scene.flipped).join(",")).join(" ");
      const best = preview.kind === "best";
      el("polyline", {points, class: `preview-path ${preview.kind || ""}`,
                      "marker-end": `url(#${best ? "arrow-head-best" : "arrow-head"})`}, layer);
      drawCaptureMarks(svg, preview.captured, scene.flipped, layer);
    }
  }

  /** Milliseconds an animated move takes per square of its path. */
  const STEP_MS = 140;

  /** Slide the piece just moved along its path, square by square (marked data-animated); a redraw
   *  during the slide picks it up where it was (``animate.started``: performance.now() at the start). */
  function animateMove(svg, animate, flipped) {
    const piece = svg.querySelector(`#piece-${animate.to}`);
    if (!piece || !piece.animate || animate.path.length < 2) return;
    const frames = animate.path.map((square) => {
      const [x, y] = centre(square, flipped);
      return {transform: `translate(${x}px, ${y}px)`};
    });
    piece.setAttribute("data-animated", animate.path.join("-"));
    const elapsed = animate.started === undefined ? 0 : performance.now() - animate.started;
    piece.animate(frames, {duration: STEP_MS * (frames.length - 1), delay: -elapsed, easing: "ease-in-out"});
  }

  /** Move the piece on ``square`` by (dx, dy) screen pixels, to follow a drag. */
  function shift(svg, square, dx, dy, flipped) {
    const piece = svg.querySelector(`#piece-${square}`);
    if (!piece) return;
    const scale = 8 * CELL / svg.getBoundingClientRect().width;
    const [x, y] = centre(square, flipped);
    piece.setAttribute("transform", `translate(${x + dx * scale},${y + dy * scale})`);
    piece.classList.add("dragged");
  }

  /** Redraw everything from a scene: {pieces, flipped, numbers, lastMove, selected, targets,
   *  steps, mustCapture, movable, captured, previews: [{path, captured, kind}], animate: {path, to}}. */
  function draw(svg, scene) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    drawDefs(svg);
    drawSquares(svg, scene);
    if (scene.numbers) drawNumbers(svg, scene);
    drawPieces(svg, scene);
    drawPreviews(svg, scene);
    if (scene.animate) animateMove(svg, scene.animate, scene.flipped);
  }

  /** The square (1-32) under a click, or null. */
  function squareOf(event) {
    const node = event.target.closest("[data-square]");
    return node ? Number(node.getAttribute("data-square")) : null;
  }

  /** Whether an animation begun at ``started`` along ``path`` is still running. */
  function animating(animate) {
    return performance.now() - animate.started < STEP_MS * (animate.path.length - 1);
  }

  return {create, draw, shift, animating, squareOf, squareToCoords, coordsToSquare};
})();
