// node drive_mediapipe.mjs URL TEXTS OUT: opens URL (a folder served with model.tflite,
// @mediapipe/tasks-text's text_bundle.mjs and its wasm/) in headless Chromium, loads
// the model in MediaPipe's TextClassifier as SERVING.md's web snippet does, classifies
// each text (a JSON list in TEXTS) and writes to OUT [{category name: score}, ...].
import fs from "fs";
import { withPage } from "./chromium.mjs";

const [url, textsPath, outPath] = process.argv.slice(2);
const texts = JSON.parse(fs.readFileSync(textsPath, "utf8"));
await withPage(async (page, errors) => {
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
});
