// A hostile "browser" for `toolmux mcp login` tests (TOOLMUX_BROWSER="node
// forge-then-follow-sign-in.mjs [deny]"): before the real sign-in it sends the loopback redirect
// listener what any local process or page could — a code with a wrong state, a bare callback,
// an error with a wrong state. Then it follows the authorization URL as follow-sign-in.mjs does,
// or, with `deny`, comes back with `error=access_denied` and the right state, as a browser
// whose person declined. Every answer (status and page) is written to the JSON file named by
// BROWSER_REPORT, once the last one came.
import { renameSync, writeFileSync } from "node:fs";

const url = process.argv[process.argv.length - 1];
const deny = process.argv.length > 3 && process.argv[2] === "deny";
const authorization = new URL(url);
const redirect = authorization.searchParams.get("redirect_uri");
const state = authorization.searchParams.get("state");
const report = { forged: [], genuine: null };
const get = async (target) => {
  const response = await fetch(target, { redirect: "follow" });
  return { url: target, status: response.status, page: await response.text() };
};
try {
  for (const forged of [
    `${redirect}?code=forged&state=WRONG`,
    redirect,
    `${redirect}?error=access_denied&state=WRONG`,
  ]) {
    report.forged.push(await get(forged));
  }
  report.genuine = deny
    ? await get(
        `${redirect}?error=access_denied&error_description=${encodeURIComponent("The person said no")}&state=${encodeURIComponent(state)}`,
      )
    : await get(url);
} catch (error) {
  report.error = String(error);
}
// Whole or not at all: the test reads it as soon as it exists.
writeFileSync(`${process.env.BROWSER_REPORT}.part`, JSON.stringify(report));
renameSync(`${process.env.BROWSER_REPORT}.part`, process.env.BROWSER_REPORT);
