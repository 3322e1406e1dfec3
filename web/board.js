// The board as SVG, laid out as `tavli-engine show` prints it: printed numbering
// (RULES.md R1), points 13..24 along the top from left to right, 12..1 along the
// bottom, White's home (1..6) bottom right; the bar in the middle (Black's checkers
// in the top half, White's in the bottom half); borne-off checkers in the tray on
// the right (Black's at the top, White's at the bottom).
//
// Each point is a <g class="point"> with data-point (printed number), data-white,
// data-black and data-pinned ("white", "black" or ""); the bar and the tray are
// <g class="bar|off" data-side data-count>. Stacks show up to five checkers; a
// taller one has its count written on the fifth. A pinned checker (Plakoto, R5.1)
// sits at the edge under the pinner's checkers, drawn with a red ring.

import { SIDE_WHITE, SIDE_BLACK } from "./grpcweb.js";

const NS = "http://www.w3.org/2000/svg";
const W = 40; // point width
const R = 17; // checker radius
const LABEL = 18; // label band above and below
const TOP = LABEL; // board top edge
const HEIGHT = 380; // board height
const BOTTOM = TOP + HEIGHT; // board bottom edge
const TRIANGLE = 150;
const BAR_X = 10 + 6 * W; // the bar column
const TRAY_X = BAR_X + W + 6 * W + 10; // the borne-off tray
const WIDTH = TRAY_X + 50;

function el(name, attrs, parent) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (parent) parent.appendChild(e);
  return e;
}

function text(parent, x, y, content, cls) {
  const t = el("text", { x, y, class: cls, "text-anchor": "middle", "dominant-baseline": "central" }, parent);
  t.textContent = content;
  return t;
}

/** The left edge of printed point p (1..24). */
function pointX(p) {
  const column = p >= 13 ? p - 13 : 12 - p; // 0..11 from the left
  return 10 + column * W + (column >= 6 ? W : 0);
}

function colour(side) {
  return side === SIDE_WHITE ? "white" : "black";
}

/**
 * Draws a stack of checkers: `items` are side constants from the edge outwards
 * ({side, pinned}); `top` is true for the top half (stacks grow downwards).
 */
function stack(g, cx, top, items, topCount) {
  const shown = items.slice(0, 5);
  shown.forEach((item, k) => {
    const cy = top ? TOP + R + 1 + k * 2 * R : BOTTOM - R - 1 - k * 2 * R;
    el("circle", { cx, cy, r: R - 1, class: `checker ${colour(item.side)}${item.pinned ? " pinned" : ""}` }, g);
    if (k === 4 && items.length > 5) text(g, cx, cy, String(topCount), `count ${colour(item.side)}`);
  });
}

/** Replaces the content of `svg` with the board of `pos` (grpcweb.js position()). */
export function drawBoard(svg, pos) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  svg.setAttribute("viewBox", `0 0 ${WIDTH} ${BOTTOM + LABEL}`);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `board ${pos.positionId}`);
  el("rect", { x: 0, y: TOP, width: WIDTH, height: HEIGHT, class: "frame" }, svg);
  el("rect", { x: 10, y: TOP, width: 6 * W, height: HEIGHT, class: "felt" }, svg);
  el("rect", { x: BAR_X + W, y: TOP, width: 6 * W, height: HEIGHT, class: "felt" }, svg);
  el("rect", { x: BAR_X, y: TOP, width: W, height: HEIGHT, class: "bar-column" }, svg);
  el("rect", { x: TRAY_X, y: TOP, width: 40, height: HEIGHT, class: "tray" }, svg);

  for (let p = 1; p <= 24; p++) {
    const pt = pos.points[p - 1] || { white: 0, black: 0, pinned: 0 };
    const x = pointX(p);
    const top = p >= 13;
    const g = el("g", {
      class: "point",
      "data-point": p,
      "data-white": pt.white,
      "data-black": pt.black,
      "data-pinned": pt.pinned ? colour(pt.pinned) : "",
    }, svg);
    const apex = top ? TOP + TRIANGLE : BOTTOM - TRIANGLE;
    const base = top ? TOP : BOTTOM;
    el("polygon", { points: `${x},${base} ${x + W},${base} ${x + W / 2},${apex}`, class: p % 2 ? "tri-odd" : "tri-even" }, g);
    text(g, x + W / 2, top ? LABEL / 2 : BOTTOM + LABEL / 2, String(p), "label");
    const items = [];
    let topCount;
    if (pt.pinned) {
      const pinner = pt.pinned === SIDE_WHITE ? SIDE_BLACK : SIDE_WHITE;
      items.push({ side: pt.pinned, pinned: true });
      topCount = pinner === SIDE_WHITE ? pt.white : pt.black;
      for (let k = 0; k < topCount; k++) items.push({ side: pinner, pinned: false });
    } else {
      for (let k = 0; k < pt.white; k++) items.push({ side: SIDE_WHITE, pinned: false });
      for (let k = 0; k < pt.black; k++) items.push({ side: SIDE_BLACK, pinned: false });
      topCount = Math.max(pt.white, pt.black);
    }
    stack(g, x + W / 2, top, items, topCount);
  }

  const barAndOff = [
    [SIDE_BLACK, true, pos.barBlack, pos.offBlack],
    [SIDE_WHITE, false, pos.barWhite, pos.offWhite],
  ];
  for (const [side, top, bar, off] of barAndOff) {
    const gb = el("g", { class: "bar", "data-side": colour(side), "data-count": bar }, svg);
    stack(gb, BAR_X + W / 2, top, Array.from({ length: bar }, () => ({ side, pinned: false })), bar);
    const go = el("g", { class: "off", "data-side": colour(side), "data-count": off }, svg);
    for (let k = 0; k < off; k++) {
      const y = top ? TOP + 4 + k * 10 : BOTTOM - 12 - k * 10;
      el("rect", { x: TRAY_X + 4, y, width: 32, height: 8, rx: 2, class: `borne ${colour(side)}` }, go);
    }
    if (off) text(go, TRAY_X + 20, top ? TOP + 170 : BOTTOM - 170, `${off} off`, "label");
  }
  const mover = pos.sideToMove === SIDE_WHITE ? "White" : "Black";
  const arrowY = pos.sideToMove === SIDE_WHITE ? BOTTOM - TRIANGLE - 20 : TOP + TRIANGLE + 20;
  text(svg, BAR_X + W / 2, arrowY, pos.sideToMove === SIDE_WHITE ? "▼" : "▲", `to-move ${mover.toLowerCase()}`);
}
