// The analysis page: show a position, rank the plays of a roll (Evaluate with
// dice), apply one (ApplyPlay) and show the new position. Every call goes to the
// engine over gRPC-Web (grpcweb.js) on this page's origin.

import { evaluate, applyPlay, dice, SIDE_WHITE, VARIANTS } from "./grpcweb.js";
import { drawBoard } from "./board.js";

const $ = (id) => document.getElementById(id);

/** The position on the board (grpcweb.js position()), once one is shown. */
let current = null;

function showError(e) {
  const box = $("error");
  if (e) {
    box.textContent = e.code ? `${e.message} (gRPC status ${e.code})` : String(e.message || e);
    box.hidden = false;
  } else {
    box.hidden = true;
    box.textContent = "";
  }
}

function signed(x) {
  return (x >= 0 ? "+" : "") + x.toFixed(3);
}

function percent(x) {
  return (100 * x).toFixed(1) + "%";
}

function clearPlays() {
  $("plays").hidden = true;
  $("plays").querySelector("tbody").replaceChildren();
}

/** Draws `pos` and fills the panel; `evaluation` is Evaluate's answer for it. */
function display(pos, evaluation) {
  current = pos;
  drawBoard($("board"), pos);
  $("position-id").textContent = pos.positionId;
  $("gnubg-id").textContent = pos.gnubgId || "—";
  const mover = pos.sideToMove === SIDE_WHITE ? "White" : "Black";
  $("to-move").textContent = `${mover} (${VARIANTS[pos.variant] || "?"})`;
  $("equity").textContent = signed(evaluation.equity);
  const p = evaluation.probabilities || { win: 0, winMars: 0, lose: 0, loseMars: 0, draw: 0 };
  $("probabilities").textContent =
    `win ${percent(p.win)} (mars ${percent(p.winMars)}), lose ${percent(p.lose)} (mars ${percent(p.loseMars)})` +
    (p.draw ? `, draw ${percent(p.draw)}` : "");
  $("evaluator").textContent = `${evaluation.evaluator}, ${evaluation.plies} plies`;
  $("rank").disabled = false;
}

/** Evaluates the position given as text (Position ID, or GNU ID with `side`) and shows it. */
async function show(text, side) {
  const evaluation = await evaluate(text, side, null, 0);
  display(evaluation.position, evaluation);
}

async function rank() {
  const d1 = Number($("die1").value);
  const d2 = Number($("die2").value);
  const plies = Number($("plies").value);
  const evaluation = await evaluate(current.positionId, 0, dice(d1, d2), plies);
  const body = $("plays").querySelector("tbody");
  body.replaceChildren();
  evaluation.rankedPlays.forEach((play, k) => {
    const tr = document.createElement("tr");
    tr.className = "ranked";
    const cells = [
      [String(k + 1), "num"],
      [null, ""],
      [signed(play.equity), "num equity"],
      [play.probabilities ? percent(play.probabilities.win) : "", "num"],
      [play.positionId, "id"],
    ];
    for (const [content, cls] of cells) {
      const td = document.createElement("td");
      td.className = cls;
      if (content === null) {
        const button = document.createElement("button");
        button.type = "button";
        button.className = "play";
        button.textContent = play.notation;
        button.dataset.notation = play.notation;
        button.title = "play it";
        button.addEventListener("click", () => run(() => apply(d1, d2, play.notation)));
        td.appendChild(button);
      } else {
        td.textContent = content;
      }
      tr.appendChild(td);
    }
    body.appendChild(tr);
  });
  $("plays").hidden = false;
}

async function apply(d1, d2, notation) {
  const applied = await applyPlay(current.positionId, 0, dice(d1, d2), notation);
  const next = applied.position;
  $("position").value = next.positionId;
  clearPlays();
  await show(next.positionId, 0);
  const ended = applied.outcome
    ? ` — game over: ${applied.outcome.winner === SIDE_WHITE ? "White" : applied.outcome.winner ? "Black" : "nobody"} wins ${applied.outcome.points}`
    : "";
  $("last-play").textContent = `${d1}-${d2}: ${applied.notation}${ended}`;
}

/** Runs one user action, showing its error (if any) instead of the last one. */
async function run(action) {
  showError(null);
  document.body.classList.add("busy");
  try {
    await action();
  } catch (e) {
    showError(e);
  } finally {
    document.body.classList.remove("busy");
  }
}

$("position-form").addEventListener("submit", (event) => {
  event.preventDefault();
  clearPlays();
  $("last-play").textContent = "";
  run(() => show($("position").value.trim(), Number($("side").value)));
});

$("dice-form").addEventListener("submit", (event) => {
  event.preventDefault();
  if (current) run(rank);
});

run(() => show($("position").value.trim(), Number($("side").value)));
