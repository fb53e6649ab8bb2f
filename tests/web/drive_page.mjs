// node drive_page.mjs URL CASES OUT: opens the web export's page in headless
// Chromium, types each case's inputs (a JSON object per line: input name ->
// text), presses Predict, and writes to OUT {ready_ms, answers: [{typed,
// answer, ms}]}: ready_ms from navigation to the page's ready state, ms from
// the click to the answer shown.
import fs from "fs";
import { withPage } from "./chromium.mjs";

const [url, casesPath, outPath] = process.argv.slice(2);
const cases = fs.readFileSync(casesPath, "utf8").split("\n").filter((l) => l).map((l) => JSON.parse(l));
await withPage(async (page, errors) => {
  const answers = [];
  const started = Date.now();
  await page.goto(url);
  await page.waitForSelector("body[data-state=ready], body[data-state=failed]", { timeout: 120000 });
  const state = await page.$eval("body", (b) => b.dataset.state);
  if (state !== "ready") {
    throw new Error("page failed: " + await page.$eval("#status", (e) => e.textContent) + errors.join("; "));
  }
  const ready = Date.now() - started;
  for (const inputs of cases) {
    for (const [name, text] of Object.entries(inputs)) {
      const selector = `#input-${name}`;
      await page.$eval(selector, (e) => { e.value = ""; });
      if (text.length <= 40) {
        await page.type(selector, text);
      } else {  // typing a long text key by key takes too long
        await page.$eval(selector, (e, t) => { e.value = t; }, text);
      }
    }
    await page.$eval("body", (b) => { b.dataset.state = "busy"; });
    const asked = Date.now();
    await page.click("#predict");
    await page.waitForSelector("body[data-state=answered]", { timeout: 120000 });
    const ms = Date.now() - asked;
    const typed = await page.$$eval("textarea", (all) => Object.fromEntries(all.map((e) => [e.name, e.value])));
    answers.push({ typed, answer: JSON.parse(await page.$eval("#answer", (e) => e.textContent)), ms });
  }
  fs.writeFileSync(outPath, JSON.stringify({ ready_ms: ready, answers }));
});
