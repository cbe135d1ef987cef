// A page on another port of the same host attacks a signed-in toolmux in a real browser (D26):
// Debian's chromium, driven by playwright-core, signs in to `toolmux serve` the way a person
// does, then opens the attacker's page (served by crates/toolmux/tests/hostile_origin.rs on
// another loopback port), which tries to change and read things through the user's browser.
// The Rust test checks what the server did (nothing) and what the attacker's server received.
//
// Usage: node hostile.mjs TOOLMUX_URL ATTACK_URL SCRATCH
//   TOOLMUX_URL the web app's URL as `toolmux serve` printed it (with `#token=…`)
//   ATTACK_URL  the attacker's page, on another port
//   SCRATCH     a folder for the browser's profile
// Prints one JSON object of findings on stdout; exits 1 with the reason when the flow fails.
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [url, attack, scratch] = process.argv.slice(2);
if (!url || !attack || !scratch) {
  console.error("usage: node hostile.mjs TOOLMUX_URL ATTACK_URL SCRATCH");
  process.exit(2);
}
const TIMEOUT = 30_000;

async function run() {
  const context = await chromium.launchPersistentContext(mkdtempSync(join(scratch, "profile-")), {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"],
  });
  context.setDefaultTimeout(TIMEOUT);
  try {
    // Sign in as a person does: the printed URL, token in the fragment.
    const app = context.pages()[0] ?? (await context.newPage());
    await app.goto(url);
    await app.waitForURL((u) => u.pathname === "/chat" && u.hash === "");
    await app.getByRole("navigation", { name: "Pages" }).waitFor();
    const cookies = await context.cookies(new URL(url).origin);
    const sessionKey = await app.evaluate(() => localStorage.getItem("toolmux.sessionKey"));
    if (!sessionKey) throw new Error("the page kept no session key after signing in");

    // The attacker's page, in another tab of the same browser.
    const evil = await context.newPage();
    await evil.goto(attack);
    await evil.waitForFunction(() => document.title === "attacks done", null, { timeout: 120_000 });
    const results = await evil.evaluate(() => window.results);
    const evilSawKey = await evil.evaluate(() => {
      try {
        return localStorage.getItem("toolmux.sessionKey");
      } catch (e) {
        return `error: ${e}`;
      }
    });

    // The session was live all along: the signed-in page still reads the API with it.
    const stillSignedIn = await app.evaluate(async () => {
      const r = await fetch("/api/tools", { headers: { "x-toolmux-session": localStorage.getItem("toolmux.sessionKey") ?? "" } });
      return r.status;
    });
    // And reloading the page keeps the person signed in.
    await app.reload();
    await app.getByRole("navigation", { name: "Pages" }).waitFor();
    const signedInAfterReload = await app.evaluate(async () => {
      const r = await fetch("/api/auth/session", { headers: { "x-toolmux-session": localStorage.getItem("toolmux.sessionKey") ?? "" } });
      return r.status;
    });
    return {
      cookies: cookies.map((c) => ({ name: c.name, httpOnly: c.httpOnly, sameSite: c.sameSite })),
      sessionKey,
      evilSawKey,
      results,
      stillSignedIn,
      signedInAfterReload,
    };
  } finally {
    await context.close();
  }
}

try {
  process.stdout.write(JSON.stringify(await run()) + "\n");
} catch (e) {
  console.error(`hostile: ${e.stack ?? e}`);
  process.exit(1);
}
