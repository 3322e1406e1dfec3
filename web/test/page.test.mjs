// The analysis page in a real browser: headless Chromium (Debian's package, at
// /usr/bin/chromium) driven by Playwright, against a tavli-engine started by
// web/ci.sh with --web-addr. Each test enters a position, lists or ranks plays,
// applies one and checks the board that results: the Position ID shown and the
// checker counts the SVG carries (data-white / data-black per point) and draws.
//
//   TAVLI_WEB_URL   the page (default http://127.0.0.1:8501)
//   CHROMIUM        the browser (default /usr/bin/chromium)
//   SCREENSHOTS     a directory: save a PNG of the page after each test

import { test, before, after, afterEach } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const BASE = process.env.TAVLI_WEB_URL || "http://127.0.0.1:8501";
const PORTES_START = "portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5";

let context;
let page;
let profile;
const pageErrors = [];

before(async () => {
  profile = mkdtempSync(join(tmpdir(), "tavli-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  page = context.pages()[0] || (await context.newPage());
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("console", (m) => {
    if (m.type() === "error") pageErrors.push(m.text());
  });
  await page.goto(BASE);
});

after(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

afterEach(async (t) => {
  if (process.env.SCREENSHOTS) {
    const name = t.name.replace(/[^a-z0-9]+/gi, "-").toLowerCase();
    await page.screenshot({ path: join(process.env.SCREENSHOTS, `${name}.png`), fullPage: true });
  }
  assert.deepEqual(pageErrors.splice(0), [], "no script errors on the page");
});

/** Waits until the page has no call in flight. */
async function idle() {
  await page.waitForFunction(() => !document.body.classList.contains("busy"));
}

/** Enters a position (and the side for a GNU ID) and presses Show. */
async function enter(text, side = "1") {
  await page.fill("#position", text);
  await page.selectOption("#side", side);
  await page.click("#show");
  await idle();
}

async function text(selector) {
  return (await page.textContent(selector)).trim();
}

/** {point: {white, black, pinned}} for every point that has checkers, from the SVG. */
async function board() {
  const points = await page.$$eval("#board g.point", (gs) =>
    gs.map((g) => [Number(g.dataset.point), Number(g.dataset.white), Number(g.dataset.black), g.dataset.pinned]),
  );
  const out = {};
  for (const [p, white, black, pinned] of points) {
    if (white || black) out[p] = pinned ? { white, black, pinned } : { white, black };
  }
  return out;
}

async function count(selector) {
  return page.locator(selector).count();
}

test("the page opens on the Portes start, drawn", async () => {
  await page.waitForFunction(() => document.getElementById("position-id").textContent !== "");
  await idle();
  assert.equal(await text("#position-id"), PORTES_START);
  assert.equal(await text("#gnubg-id"), "4HPwATDgc/ABMA");
  assert.equal(await text("#to-move"), "White (Portes)");
  assert.deepEqual(await board(), {
    1: { white: 0, black: 2 },
    6: { white: 5, black: 0 },
    8: { white: 3, black: 0 },
    12: { white: 0, black: 5 },
    13: { white: 5, black: 0 },
    17: { white: 0, black: 3 },
    19: { white: 0, black: 5 },
    24: { white: 2, black: 0 },
  });
  assert.equal(await count("#board circle.checker.white"), 15);
  assert.equal(await count("#board circle.checker.black"), 15);
  assert.equal(await count("#board g.point"), 24);
});

test("a GNU Backgammon ID with the side on roll", async () => {
  await enter("4HPwATDgc/ABMA", "2");
  assert.equal(await text("#position-id"), "portes/b/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5");
  assert.equal(await text("#to-move"), "Black (Portes)");
  assert.ok(await page.locator("#error").isHidden());
});

test("rank the plays of 3-1, apply 8/5 6/5, see the new board", async () => {
  await enter(PORTES_START);
  await page.selectOption("#die1", "3");
  await page.selectOption("#die2", "1");
  await page.click("#rank");
  await idle();
  // R4: 16 legal plays of 3-1 from the start, ranked best first.
  assert.equal(await count("#plays tbody tr"), 16);
  const equities = (await page.$$eval("#plays td.equity", (tds) => tds.map((td) => td.textContent))).map(Number);
  assert.deepEqual(equities, [...equities].sort((a, b) => b - a), "best first");
  const notations = await page.$$eval("#plays button.play", (bs) => bs.map((b) => b.dataset.notation));
  assert.ok(notations.includes("8/5 6/5"), notations.join(", "));

  await page.click('#plays button.play[data-notation="8/5 6/5"]');
  await idle();
  assert.equal(await text("#position-id"), "portes/b/24:2,13:5,8:2,6:4,5:2/1:2,12:5,17:3,19:5");
  assert.equal(await text("#to-move"), "Black (Portes)");
  assert.equal(await text("#last-play"), "3-1: 8/5 6/5");
  assert.equal(await page.inputValue("#position"), "portes/b/24:2,13:5,8:2,6:4,5:2/1:2,12:5,17:3,19:5");
  assert.deepEqual(await board(), {
    1: { white: 0, black: 2 },
    5: { white: 2, black: 0 },
    6: { white: 4, black: 0 },
    8: { white: 2, black: 0 },
    12: { white: 0, black: 5 },
    13: { white: 5, black: 0 },
    17: { white: 0, black: 3 },
    19: { white: 0, black: 5 },
    24: { white: 2, black: 0 },
  });
  assert.equal(await count("#board circle.checker.white"), 15);
  assert.ok(await page.locator("#plays").isHidden(), "the old plays are gone");
});

test("Fevga 6-6 from the start has one play (R8.2); applying it", async () => {
  await enter("fevga/w/24:15/12:15");
  await page.selectOption("#die1", "6");
  await page.selectOption("#die2", "6");
  await page.click("#rank");
  await idle();
  assert.equal(await count("#plays tbody tr"), 1);
  await page.click('#plays button.play[data-notation="24/18"]');
  await idle();
  assert.equal(await text("#position-id"), "fevga/b/24:14,18:1/12:15");
  assert.deepEqual(await board(), {
    12: { white: 0, black: 15 },
    18: { white: 1, black: 0 },
    24: { white: 14, black: 0 },
  });
  // Stacks over five show five checkers and the count on the fifth.
  assert.equal(await count("#board circle.checker.white"), 5 + 1);
  assert.deepEqual(await page.$$eval("#board text.count", (ts) => ts.map((t) => t.textContent).sort()), ["14", "15"]);
});

test("Plakoto pins are drawn under the pinner (R5.1)", async () => {
  await enter("plakoto/w/24:13,20:1,5:1p/1:13,5:1,20:1p");
  assert.equal(await text("#position-id"), "plakoto/w/24:13,20:1,5:1p/1:13,5:1,20:1p");
  const b = await board();
  assert.deepEqual(b[20], { white: 1, black: 1, pinned: "black" });
  assert.deepEqual(b[5], { white: 1, black: 1, pinned: "white" });
  assert.equal(await count("#board circle.checker.pinned"), 2);
  assert.equal(await count("#board circle.checker.black.pinned"), 1);
});

test("a bad position shows the engine's error", async () => {
  await enter("portes/w/24:16/1:15");
  assert.ok(await page.locator("#error").isVisible());
  assert.match(await text("#error"), /^position\.position_id: .*\(gRPC status 3\)$/);
});
