// withPage(fn): runs fn(page, errors) in a fresh headless Chromium (puppeteer-core from
// the repo's node_modules, the browser from $CHROMIUM or /usr/bin/chromium, a throwaway
// profile), collecting the page's uncaught errors in `errors`; closes the browser and
// removes the profile whatever happens. Shared by the page-driving test scripts.
import fs from "fs";
import os from "os";
import path from "path";
import { fileURLToPath } from "url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const puppeteer = (await import(path.join(root, "node_modules/puppeteer-core/lib/esm/puppeteer/puppeteer-core.js"))).default;

export async function withPage(fn) {
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
    return await fn(page, errors);
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}
