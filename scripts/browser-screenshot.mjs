// Takes docs/images/browser-page.png, the screenshot docs/browser.md shows: starts `grpo web` on a
// free port (its code, from a checkout), opens the page in headless Chromium (playwright-core,
// Debian's chromium or CHROMIUM_PATH), trains `?preset=quick` on the default wasm backend to the
// end, and captures the page. Prints the page's status line (backend, steps/s), which
// docs/browser.md quotes. Run: `npx tsx scripts/browser-screenshot.mjs [out.png]` (a minute or more).
import { statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { runWebCommand } from '../src/web/server.ts';

const repository = fileURLToPath(new URL('../', import.meta.url));
const out = process.argv[2] ?? `${repository}docs/images/browser-page.png`;
const web = await runWebCommand({ port: 0 });
try {
  const url = web.url;
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1140, height: 900 } });
    await page.goto(`${url}?preset=quick`);
    await page.click('#start');
    await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state), null, {
      timeout: 600_000,
    });
    console.log(await page.textContent('#status'));
    console.log(await page.textContent('#error'));
    await page.screenshot({ path: out, fullPage: true });
    console.log(`wrote ${out} (${statSync(out).size} bytes)`);
  } finally {
    await browser.close();
  }
} finally {
  await web.close();
}
