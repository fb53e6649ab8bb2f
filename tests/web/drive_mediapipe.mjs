// node drive_mediapipe.mjs URL TEXTS OUT: opens URL (a folder served with model.tflite,
// @mediapipe/tasks-text's text_bundle.mjs and its wasm/) in headless Chromium, loads
// the model in MediaPipe's TextClassifier as SERVING.md's web snippet does, classifies
// each text (a JSON list in TEXTS) and writes to OUT [{category name: score}, ...].
import fs from "fs";
import os from "os";
import path from "path";
import { fileURLToPath } from "url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const puppeteer = (await import(path.join(root, "node_modules/puppeteer-core/lib/esm/puppeteer/puppeteer-core.js"))).default;
const [url, textsPath, outPath] = process.argv.slice(2);
const texts = JSON.parse(fs.readFileSync(textsPath, "utf8"));
const profile = fs.mkdtempSync(path.join(os.tmpdir(), "albert-chromium-"));
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    `--user-data-dir=${profile}`],
});
try {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(url);
  const scores = await page.evaluate(async (texts) => {
    const { FilesetResolver, TextClassifier } = await import("./text_bundle.mjs");
    const fileset = await FilesetResolver.forTextTasks("./wasm");
    const classifier = await TextClassifier.createFromOptions(fileset, {
      baseOptions: { modelAssetPath: "model.tflite" }, maxResults: -1 });
    return texts.map((text) => Object.fromEntries(
      classifier.classify(text).classifications[0].categories.map(
        (c) => [c.categoryName, c.score])));
  }, texts);
  if (errors.length) throw new Error(errors.join("; "));
  fs.writeFileSync(outPath, JSON.stringify(scores));
} finally {
  await browser.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
