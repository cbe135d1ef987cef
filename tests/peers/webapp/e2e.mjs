// The web app's end-to-end flows in a real browser: Debian's chromium driven by playwright-core
// against a real `toolmux serve` (started by crates/toolmux/tests/webapp_e2e.rs, which also
// checks what the flows leave on disk and in the server).
//
// Usage: node e2e.mjs PHASE URL SCRATCH
//   PHASE   chat | basics | conversations | layout | specs | specwait | nospecs | approvals | reload | elsewhere | questions | tools | servers | signin | activity | sessions | progress | a11y | perf
//   URL     the web app's URL as `toolmux serve` printed it (with `#token=…`)
//   SCRATCH a folder for the browser's profile and the screenshots
// SCREENSHOTS (optional) is a folder where the layout flow puts a screenshot of each page
// (`web/screenshots/`, for reviewers).
// E2E_WIDTH (optional) is the viewport's width, for a phone-sized screen (390 × 844); without it
// the screen is a desktop's (1280 × 800).
// Prints one JSON object of findings on stdout; exits 1 with the reason when a flow fails.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [phase, url, scratch] = process.argv.slice(2);
if (!phase || !url || !scratch) {
  console.error("usage: node e2e.mjs PHASE URL SCRATCH");
  process.exit(2);
}
const origin = new URL(url).origin;
const TIMEOUT = 30_000;

function check(condition, message) {
  if (!condition) throw new Error(message);
}

async function open(options = {}) {
  const context = await chromium.launchPersistentContext(mkdtempSync(join(scratch, "profile-")), {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    // E2E_WIDTH runs a flow on a phone-sized screen (390 × 844) instead of a desktop's.
    viewport: process.env.E2E_WIDTH ? { width: Number(process.env.E2E_WIDTH), height: 844 } : { width: 1280, height: 800 },
    ...options,
  });
  context.setDefaultTimeout(TIMEOUT);
  const page = context.pages()[0] ?? (await context.newPage());
  const problems = [];
  problemsOf.set(page, problems);
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    // A 401/404 the app expects (the session check) is logged by the browser as a failed
    // resource; only the app's own errors count.
    if (m.type() === "error" && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()} at ${JSON.stringify(m.location())}`);
  });
  // Sign in the way a person does: the URL `serve` printed, token in the fragment.
  await page.goto(url);
  await page.waitForURL((u) => u.pathname === "/chat" && u.hash === "");
  await page.getByRole("navigation", { name: "Pages" }).waitFor();
  // The address is /chat before the app has rendered it: the app's effects of the move from `/`
  // (one closes the menu, so a Menu opened before it would close again) run in the commit that
  // also titles the page, so the title says they ran.
  await page.waitForFunction(() => document.title === "Chat · toolmux");
  return { context, page, problems };
}

// Each page's list of problems (console errors, and on a phone any screen that scrolls
// sideways), which fail its flow.
const problemsOf = new WeakMap();

// A screenshot; on a phone-sized screen also the check that nothing on it scrolls sideways,
// so every flow run at 390 px checks every state it photographs, not only empty pages.
async function shot(page, name) {
  if (process.env.E2E_WIDTH) {
    const { scroll, inner } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: innerWidth }));
    if (scroll > inner) problemsOf.get(page)?.push(`${name}: the page is ${scroll} px wide on a ${inner} px screen`);
  }
  const path = join(scratch, `${name}.png`);
  await page.screenshot({ path, fullPage: false });
  return path;
}

// A page chosen from the navigation: on a phone, its Menu opened first.
async function visit(page, name) {
  const menu = page.getByRole("button", { name: "Menu" });
  if (await menu.isVisible()) {
    // A page chosen before closes the menu in an effect after the route changes: wait for it to
    // be closed, then open it (reading it at once, or clicking at once, races that effect).
    await page.waitForFunction((el) => el.getAttribute("aria-expanded") !== "true", await menu.elementHandle());
    await menu.click();
  }
  await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name, exact: true }).click();
}

// Opens `path` as the app's own navigation does, and waits until the page has loaded its data.
async function showPage(page, path) {
  await page.evaluate((p) => {
    history.pushState(null, "", p);
    dispatchEvent(new PopStateEvent("popstate"));
  }, path);
  await page.locator("main h1").first().waitFor({ state: "attached" });
  // The page holds an event stream open, so the network is never idle: wait for the page's own
  // "Loading…" placeholders to go instead.
  await page.waitForFunction(() => !document.querySelector("main")?.textContent?.includes("Loading…"));
  await page.waitForTimeout(300);
}

// Whether `locator` is (or becomes, within a few seconds) hidden / shown: a check that waits for
// what an effect does after a click, instead of reading the page in the same instant.
const becomesHidden = (locator) => locator.waitFor({ state: "hidden", timeout: 5_000 }).then(() => true, () => false);
const becomesShown = (locator) => locator.waitFor({ state: "visible", timeout: 5_000 }).then(() => true, () => false);

// The conversation list: on a phone, its drawer opened first.
async function conversationList(page) {
  const drawer = page.getByRole("button", { name: "Conversations" });
  if ((await drawer.isVisible()) && (await drawer.getAttribute("aria-expanded")) !== "true") await drawer.click();
  return page.getByRole("complementary", { name: "Conversations" });
}

// "New conversation", then the empty thread it shows: a person reads the page before typing.
async function newConversation(page) {
  await (await conversationList(page)).getByRole("link", { name: "New conversation" }).click();
  await page.getByText("Ask anything; the model can use every tool in the catalog.").waitFor();
}

// The navigation's count of what waits: on the Approvals link, or on a phone on its Menu button.
function waitingCount(page) {
  const nav = page.getByRole("navigation", { name: "Pages" });
  return nav.locator(".badge.count").filter({ visible: true }).first();
}

// What each tool card shows of its call: its badge, duration, and how its result is laid out
// (grep's matches grouped by file, file_read's numbered lines).
function cardViews(page) {
  return page.locator("article.tool-card").evaluateAll((cards) =>
    cards.map((card) => ({
      tool: card.dataset.tool,
      badge: card.querySelector(".badge")?.textContent ?? null,
      duration: card.querySelector(".duration")?.textContent ?? null,
      outcome: card.querySelector(".outcome")?.textContent ?? null,
      groups: [...card.querySelectorAll(".grep-file h4")].map((h) => h.textContent),
      marks: card.querySelectorAll("mark").length,
      lines: card.querySelectorAll("table.code-lines tr").length,
    })),
  );
}

// Whether a table's row is folded into a list (its cells one under another, as on a phone)
// rather than laid out side by side.
function rowFolded(row) {
  return row.evaluate((tr) => {
    const lefts = [...tr.querySelectorAll("td")].map((td) => Math.round(td.getBoundingClientRect().left));
    return lefts.length > 1 && lefts.every((x) => x === lefts[0]);
  });
}

// axe-core's serious and critical findings on the page as it is (the page must be opened with
// `bypassCSP`: the page's CSP rightly refuses the injected script).
async function seriousViolations(page) {
  await page.evaluate(readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8"));
  return page.evaluate(async () => {
    const r = await globalThis.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => ({ id: v.id, help: v.help }));
  });
}

async function ask(page, text) {
  await page.getByLabel("Message", { exact: true }).fill(text);
  await page.getByLabel("Message", { exact: true }).press("Enter");
}

const phases = {
  // A question whose answer needs grep then file_read: two cards with their badges and
  // renderers, then the answer; the conversation resumes from its address.
  async chat() {
    const { context, page, problems } = await open();
    await ask(page, "Where is the release codename defined?");
    const answer = page.locator(".message.assistant .markdown", { hasText: "The codename is Bluefin." });
    await answer.waitFor();
    const cards = page.locator("article.tool-card");
    check((await cards.count()) === 2, `expected two tool cards, saw ${await cards.count()}`);
    const grep = page.locator('article.tool-card[data-tool="grep"]');
    const read = page.locator('article.tool-card[data-tool="file_read"]');
    const badges = [await grep.locator(".badge").first().innerText(), await read.locator(".badge").first().innerText()];
    check(badges.every((b) => b === "built-in · workspace"), `badges: ${badges}`);
    // grep: grouped by file, the match highlighted.
    check((await grep.locator(".grep-file h4", { hasText: "notes/release.md" }).count()) === 1, "grep result not grouped by file");
    const marked = await grep.locator("mark").first().innerText();
    check(marked.toLowerCase() === "codename", `grep highlight: ${marked}`);
    // file_read: the file with its line numbers.
    const row = read.locator("table.code-lines tr", { hasText: "The codename is Bluefin." });
    const lineNo = await row.locator("th").innerText();
    check(lineNo === "2", `file_read line number: ${lineNo}`);
    check((await read.locator("a.log-link").count()) === 1, "no link to the activity entry");
    const chatShot = await shot(page, "chat");
    const live = await cardViews(page);
    const address = new URL(page.url()).pathname;
    check(/^\/chat\/.+/.test(address), `the conversation has no address: ${address}`);
    // Resume: a fresh load of the address shows the same conversation, its cards as they were.
    await page.reload();
    await page.locator('article.tool-card[data-tool="file_read"]').waitFor();
    await page.locator(".message.assistant", { hasText: "The codename is Bluefin." }).waitFor();
    const reopened = await cardViews(page);
    const reopenedShot = await shot(page, "chat-reopened");
    // Rename from the list.
    await (await conversationList(page)).getByRole("button", { name: /^Rename / }).first().click();
    await page.getByLabel("New title").fill("Codename hunt");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("link", { name: "Codename hunt" }).waitFor();
    await page.emulateMedia({ colorScheme: "dark" });
    const darkShot = await shot(page, "chat-dark");
    await context.close();
    return { badges, address, live, reopened, screenshots: [chatShot, reopenedShot, darkShot], problems };
  },

  // Conversations keep their own messages (issue 30): "New conversation" empties the thread
  // and the next message starts a new conversation; sent in A, B opened, A opened again shows A.
  async conversations() {
    const { context, page, problems } = await open();
    const thread = page.getByRole("log", { name: "Messages" });
    await ask(page, "Where is the release codename defined?");
    await page.locator(".message.assistant .markdown", { hasText: "The codename is Bluefin." }).waitFor();
    const first = new URL(page.url()).pathname;
    // The thread empties (the flow fails in `newConversation` if it never does) and the address
    // leaves the conversation.
    await newConversation(page);
    const afterNew = new URL(page.url()).pathname;
    await ask(page, "Say hello");
    await page.locator(".message.assistant", { hasText: "Hello there." }).waitFor();
    const second = new URL(page.url()).pathname;
    // textContent, not innerText: messages scrolled out of view are `content-visibility: auto`,
    // and innerText leaves out what is not rendered (on a phone, most of the thread).
    const secondThread = await thread.textContent();
    // A fresh load: neither conversation is this page's own any more.
    await page.goto(origin + second);
    await page.locator(".message.assistant", { hasText: "Hello there." }).waitFor();
    const opened = async (path) => (await conversationList(page)).locator(`a[href="${path}"]`).click();
    // Send in A, open B, open A again.
    await opened(first);
    await page.locator(".message.assistant", { hasText: "The codename is Bluefin." }).waitFor();
    await ask(page, "Say goodbye");
    await page.locator(".message.assistant", { hasText: "Goodbye now." }).waitFor();
    await opened(second);
    await page.locator(".message.assistant", { hasText: "Hello there." }).waitFor();
    await opened(first);
    await page.waitForURL((u) => u.pathname === first);
    await page.locator(".message.assistant", { hasText: "Goodbye now." }).waitFor();
    const back = await thread.textContent();
    const screenshot = await shot(page, "conversations");
    await context.close();
    return {
      first,
      second,
      afterNew,
      secondShowsFirst: secondThread.includes("Bluefin"),
      backShowsFirst: back.includes("Bluefin") && back.includes("Goodbye now."),
      backShowsSecond: back.includes("Hello there."),
      screenshots: [screenshot],
      problems,
    };
  },

  // Every page at the viewport's width (E2E_WIDTH, or a desktop's) with a 300-character word in
  // the conversation: none scrolls sideways, Send is on screen; on a phone the page list and the
  // conversations fold behind buttons that open them.
  async layout() {
    const { context, page, problems } = await open();
    const phone = Boolean(process.env.E2E_WIDTH);
    const word = "W".repeat(300);
    await ask(page, `Repeat the long word ${word}`);
    await page.locator(".message.assistant", { hasText: "Here it is:" }).waitFor();
    // A turn with tool cards after it, so the conversation's screenshot shows what a chat holds.
    await ask(page, "Where is the release codename defined?");
    await page.locator(".message.assistant .markdown", { hasText: "The codename is Bluefin." }).waitFor();
    const conversation = new URL(page.url()).pathname;
    const pages = [conversation, "/chat", "/tools", "/tools/grep", "/servers", "/activity", "/approvals", "/sessions", "/specs", "/specs/002-search-index"];
    // The reviewer's set (web/screenshots/, when SCREENSHOTS names it): a page each, named by
    // what it shows and the screen it was taken on.
    const named = { [conversation]: "chat", "/chat": "chat-new", "/tools/grep": "tool", "/specs/002-search-index": "spec" };
    const overflowing = [];
    const hiddenSend = [];
    const screenshots = [];
    const width = () => page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: innerWidth }));
    for (const path of pages) {
      await showPage(page, path);
      const { scroll, inner } = await width();
      if (scroll > inner) overflowing.push({ path, scroll, inner });
      if (path.startsWith("/chat")) {
        const box = await page.getByRole("button", { name: "Send" }).boundingBox();
        const size = page.viewportSize();
        if (!box || box.x < 0 || box.y < 0 || box.x + box.width > size.width || box.y + box.height > size.height)
          hiddenSend.push({ path, box });
      }
      screenshots.push(await shot(page, `layout${path === conversation ? "-conversation" : path.replaceAll("/", "-")}`));
      if (process.env.SCREENSHOTS) {
        const name = named[path] ?? path.slice(1);
        await page.screenshot({ path: join(process.env.SCREENSHOTS, `${name}-${phone ? "phone" : "desktop"}.png`) });
      }
    }
    let folded = null;
    if (phone) {
      // The page list: folded, then opened by "Menu", and a page chosen from it.
      const tools = page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Tools" });
      const listFolded = !(await tools.isVisible());
      await visit(page, "Tools");
      await page.waitForURL((u) => u.pathname === "/tools");
      // The conversations: a drawer, closed until asked for.
      await visit(page, "Chat");
      const list = page.getByRole("complementary", { name: "Conversations" });
      await page.getByRole("button", { name: "Conversations" }).waitFor();
      const drawerClosed = await becomesHidden(list);
      await page.getByRole("button", { name: "Conversations" }).click();
      await list.locator(`a[href="${conversation}"]`).click();
      await page.waitForURL((u) => u.pathname === conversation);
      await page.locator(".message.assistant", { hasText: "Here it is:" }).waitFor();
      const drawerClosedAgain = await becomesHidden(list);
      screenshots.push(await shot(page, "layout-drawer-chosen"));
      folded = { listFolded, drawerClosed, drawerClosedAgain };
    }
    await context.close();
    return { overflowing, hiddenSend, folded, pages: pages.length, screenshots, problems };
  },

  // The specs board (issue 30: `/specs` was a blank page): its columns as shown, a spec opened
  // with its body rendered and its relationships as links, and a status change that moves its
  // card to the new column.
  async specs() {
    const { context, page, problems } = await open();
    const columns = () =>
      page.locator(".board .column").evaluateAll((cols) =>
        cols.map((c) => ({
          name: c.querySelector("h2").firstChild.textContent.trim(),
          cards: [...c.querySelectorAll(".spec-card")].map((card) => ({
            title: card.querySelector("a").textContent,
            badges: [...card.querySelectorAll(".badge")].map((b) => b.textContent),
          })),
        })),
      );
    await visit(page, "Specs");
    await page.waitForURL((u) => u.pathname === "/specs");
    await page.locator(".board").waitFor();
    const board = await columns();
    const boardShot = await shot(page, "specs");
    await page.getByRole("link", { name: "#002 Search Index" }).click();
    await page.waitForURL((u) => u.pathname === "/specs/002-search-index");
    const body = page.getByRole("article", { name: "Spec" });
    await body.locator(".markdown").waitFor();
    const rendered = {
      headings: await body.locator("h2").allTextContents(),
      strong: await body.locator("strong").allTextContents(),
      items: await body.locator("li").allTextContents(),
    };
    const relationships = await page.locator(".relationships > div").evaluateAll((rows) =>
      rows.map((r) => [r.querySelector("dt").textContent, [...r.querySelectorAll("dd a")].map((a) => a.getAttribute("href"))]),
    );
    const specShot = await shot(page, "spec");
    await page.getByLabel("Status").selectOption("complete");
    await page.getByRole("button", { name: "Change status" }).click();
    await page.waitForFunction(() => document.querySelector('[data-testid="spec-status"]')?.textContent === "complete");
    const status = await page.getByTestId("spec-status").textContent();
    // A relationship is a link: the spec it depends on opens.
    await page.locator(".relationships a", { hasText: "001-auth-login" }).click();
    await page.waitForURL((u) => u.pathname === "/specs/001-auth-login");
    await page.getByRole("heading", { name: "#001 Auth Login" }).waitFor();
    const requiredBy = await page.locator(".relationships > div", { hasText: "Required by" }).locator("a").allTextContents();
    await page.getByRole("link", { name: "← Specs board" }).click();
    await page.waitForURL((u) => u.pathname === "/specs");
    await page.locator(".board").waitFor();
    const moved = await columns();
    const movedShot = await shot(page, "specs-moved");
    await context.close();
    return { board, rendered, relationships, status, requiredBy, moved, screenshots: [boardShot, specShot, movedShot], problems };
  },

  // A status change under the default policy (a write asks): the page says it waits, with the
  // approval's buttons, and shows the new status once Allow is pressed.
  async specwait() {
    const { context, page, problems } = await open();
    await showPage(page, "/specs/002-search-index");
    await page.getByLabel("Status").selectOption("complete");
    await page.getByRole("button", { name: "Change status" }).click();
    const waiting = page.getByRole("status").filter({ hasText: "Waiting for approval" });
    await waiting.waitFor();
    const said = await waiting.textContent();
    const counted = await waitingCount(page).textContent();
    const waitingShot = await shot(page, "spec-waiting");
    await waiting.getByRole("button", { name: "Allow" }).click();
    await page.waitForFunction(() => document.querySelector('[data-testid="spec-status"]')?.textContent === "complete");
    const gone = await becomesHidden(waiting);
    const screenshot = await shot(page, "spec-allowed");
    await context.close();
    return { said, counted, gone, screenshots: [waitingShot, screenshot], problems };
  },

  // A project without a `specs` directory: the board page says so in the API's words.
  async nospecs() {
    const { context, page, problems } = await open();
    await visit(page, "Specs");
    const notice = page.getByRole("status").filter({ hasText: "specs" });
    await notice.waitFor();
    const said = await notice.textContent();
    const heading = await page.locator("main h1").textContent();
    const screenshot = await shot(page, "nospecs");
    await context.close();
    return { said, heading, screenshots: [screenshot], problems };
  },

  // An `ask` tool: the approval inline (and counted in the navigation), Deny with a reason
  // reaches the model as the error; Allow for this conversation stops asking (server-side); the model's
  // question as a form whose answer reaches the model.
  async approvals() {
    const { context, page, problems } = await open();
    await ask(page, "Read the secret plan");
    const card = page.locator("section.approval-card").first();
    await card.waitFor();
    await waitingCount(page).filter({ hasText: "1" }).waitFor();
    // One card for the call and its approval (issue 30): the call's card holds the buttons and
    // says it waits. Counted once the call's card is there.
    const call = page.locator('article.tool-card[data-tool="file_read"]').first();
    await call.waitFor();
    const cardsWhileWaiting = await page.locator(".message.assistant > article.tool-card, .message.assistant > section.approval-card").count();
    const waitingOutcome = await call.locator("header .outcome").innerText();
    const badge = await call.locator(".badge").first().innerText();
    await card.getByLabel("Reason for denying").fill("not today");
    await card.getByRole("button", { name: "Deny" }).click();
    await page.locator(".message.assistant", { hasText: "I was not allowed to read plan.txt." }).waitFor();
    const failed = page.locator("article.tool-card.failed .result-error");
    const denied = await failed.innerText();
    check(/refused/.test(denied) && /not today/.test(denied), `the denial is not shown as the error: ${denied}`);

    await newConversation(page);
    await ask(page, "Read the plan twice");
    await page.locator("section.approval-card").first().getByRole("button", { name: "Allow for this conversation" }).click();
    await page.locator(".message.assistant", { hasText: "Read it twice." }).waitFor();
    // toolmux remembers the answer: the second call runs without a card.
    const approvals = await page.locator("section.approval-card").count();
    const first = await page.locator("section.approval-card").first().innerText();
    check(approvals === 1 && /Allowed for this conversation/.test(first), `approvals: ${approvals} ${first}`);
    check((await page.locator("section.approval-card button").count()) === 0, "an approval still asks");

    await newConversation(page);
    await ask(page, "Pick a colour for me");
    const question = page.locator("section.input-card");
    await question.waitFor();
    await question.getByLabel("Your answer").fill("teal");
    await question.getByRole("button", { name: "Send" }).click();
    await page.locator(".message.assistant", { hasText: "Teal it is." }).waitFor();
    const screenshot = await shot(page, "chat-approvals");
    await context.close();
    return { badge, cardsWhileWaiting, waitingOutcome, denied, approvals, screenshots: [screenshot], problems };
  },

  // A turn survives a reload (issue 30): reloaded while its approval waits, the page shows the
  // approval from the queue with live buttons, and once it is answered, the turn's answer. The
  // turn before it made the same call, already done: the approval belongs to the waiting one,
  // and stays in its card once answered. The conversation's reads while the answer streams are
  // counted: the page reads on the turn's events and its end, not on a clock.
  async reload() {
    const { context, page, problems } = await open();
    await ask(page, "Read the plan first");
    // Only a waiting approval has buttons: the first turn's answered one keeps none.
    const allow = page.getByRole("button", { name: "Allow once" });
    await allow.click();
    await page.locator(".message.assistant", { hasText: "First read." }).waitFor();
    await ask(page, "Read the plan after a reload");
    await allow.waitFor();
    await page.waitForURL((u) => /^\/chat\/.+/.test(u.pathname));
    const address = new URL(page.url()).pathname;
    await page.reload();
    await page.waitForURL((u) => u.pathname === address);
    const card = page.locator("section.approval-card", { hasText: "file_read" });
    await card.getByRole("button", { name: "Allow once" }).waitFor();
    const buttons = await card.locator("button").allInnerTexts();
    // The call's own card, still running, badged as the live one was.
    const waitingCards = await cardViews(page);
    const waitingShot = await shot(page, "chat-reload-waiting");
    const reads = [];
    page.on("request", (r) => {
      if (new URL(r.url()).pathname === `/api/conversations/${address.slice("/chat/".length)}`) reads.push(r.url());
    });
    await card.getByRole("button", { name: "Allow once" }).click();
    // The call's card says done after a read made on the call's log entry; the model's answer
    // then streams for some 3 s, which the page sees only when it reads the ended turn.
    await page.locator('article.tool-card[data-tool="file_read"]').last().locator(".outcome", { hasText: "done" }).waitFor();
    const readsBefore = reads.length;
    await page.locator(".message.assistant", { hasText: "The plan says secret." }).waitFor();
    const readsWhileAnswering = reads.length - readsBefore;
    const cards = await cardViews(page);
    // Where the answered approval is: in the card of the call it was for, or on its own.
    const answeredPlace = await page
      .locator("section.approval-card")
      .evaluateAll((all) => all.map((a) => (a.closest("article.tool-card") ? "in its call's card" : "on its own")));
    const answeredShot = await shot(page, "chat-reload-answered");
    await context.close();
    return { address, buttons, waitingCards, cards, answeredPlace, readsWhileAnswering, screenshots: [waitingShot, answeredShot], problems };
  },

  // An approval answered elsewhere (issue 30): the chat's card, answered on the Approvals page
  // of another tab, says how it ended and offers no button.
  async elsewhere() {
    const { context, page, problems } = await open();
    await ask(page, "Read the plan from elsewhere");
    const card = page.locator("section.approval-card", { hasText: "file_read" });
    await card.getByRole("button", { name: "Allow once" }).waitFor();
    const other = await context.newPage();
    other.on("pageerror", (e) => problems.push(`other tab: page error: ${e.message}`));
    await other.goto(origin + "/approvals");
    const waitingCall = other.locator("li.approval-card", { hasText: "file_read" });
    await waitingCall.getByRole("button", { name: "Allow", exact: true }).click();
    await waitingCall.waitFor({ state: "detached" });
    const otherShot = await shot(other, "approvals-answered-elsewhere");
    await other.close();
    await card.getByRole("status").filter({ hasText: "Allowed elsewhere" }).waitFor();
    const said = await card.getByRole("status").innerText();
    const buttons = await card.locator("button").count();
    await page.locator(".message.assistant", { hasText: "Read it once." }).waitFor();
    const screenshot = await shot(page, "chat-answered-elsewhere");
    await context.close();
    return { said, buttons, screenshots: [otherShot, screenshot], problems };
  },

  // A question waiting for a person (issue 30). Reloaded while it waits, the page shows its
  // form from the queue, reads the conversation only when something happens in it (not on a
  // clock while the question waits), and the answer given in that form reaches the model. Asked
  // again and answered on the Approvals page of another tab, the chat's card loses its form and
  // says so.
  async questions() {
    const { context, page, problems } = await open();
    const question = "Which colour do you like?";
    await ask(page, "Pick a colour for me");
    await page.locator("section.input-card", { hasText: question }).getByLabel("Your answer").waitFor();
    await page.waitForURL((u) => /^\/chat\/.+/.test(u.pathname));
    const address = new URL(page.url()).pathname;
    const conversationReads = [];
    page.on("request", (r) => {
      if (new URL(r.url()).pathname === `/api/conversations/${address.slice("/chat/".length)}`) conversationReads.push(Date.now());
    });
    await page.reload();
    await page.waitForURL((u) => u.pathname === address);
    const reloaded = page.locator("section.input-card", { hasText: question });
    await reloaded.getByLabel("Your answer").waitFor();
    await page.getByRole("status").filter({ hasText: "still being worked on" }).waitFor();
    // The count of reads once the form shows, over three seconds of waiting.
    const shown = Date.now();
    await page.waitForTimeout(3000);
    const readsWhileWaiting = conversationReads.filter((t) => t > shown).length;
    const reloadedShot = await shot(page, "chat-question-reloaded");
    await reloaded.getByLabel("Your answer").fill("teal");
    await reloaded.getByRole("button", { name: "Send" }).click();
    await page.locator(".message.assistant", { hasText: "Teal it is." }).waitFor();
    const answeredHere = await reloaded.getByRole("status").innerText();
    const answeredShot = await shot(page, "chat-question-answered");

    await newConversation(page);
    await ask(page, "Pick a colour for me");
    const card = page.locator("section.input-card", { hasText: question });
    await card.getByLabel("Your answer").waitFor();
    const other = await context.newPage();
    other.on("pageerror", (e) => problems.push(`other tab: page error: ${e.message}`));
    await other.goto(origin + "/approvals");
    const waitingQuestion = other.locator("li.input-card", { hasText: question });
    // The server's free-text schema names its one field "Answer".
    await waitingQuestion.getByRole("textbox").fill("teal");
    await waitingQuestion.getByRole("button", { name: "Answer", exact: true }).click();
    await waitingQuestion.waitFor({ state: "detached" });
    await other.close();
    await card.getByRole("status").filter({ hasText: "Answered elsewhere" }).waitFor();
    const said = await card.getByRole("status").innerText();
    const controls = await card.locator("button, input, textarea, select").count();
    await page.locator(".message.assistant", { hasText: "Teal it is." }).nth(0).waitFor();
    const elsewhereShot = await shot(page, "chat-question-answered-elsewhere");
    await context.close();
    return {
      address,
      readsWhileWaiting,
      answeredHere,
      said,
      controls,
      screenshots: [reloadedShot, answeredShot, elsewhereShot],
      problems,
    };
  },

  // The catalog: a switched-off tool listed greyed and switched on again, search, a tool's
  // details, a policy change written to the configuration, and Try it rendered with the chat's
  // renderers.
  async tools() {
    const { context, page, problems } = await open();
    await visit(page, "Tools");
    await page.getByRole("searchbox", { name: "Search tools" }).fill("file_search");
    await page.getByLabel("On or off").selectOption("off");
    const offRow = page.locator('.tool-row.off[data-tool="file_search"]');
    await offRow.waitFor();
    const offBadge = await offRow.locator(".badge.off").innerText();
    const offKind = await offRow.locator(".badge[data-source]").innerText();
    const offShot = await shot(page, "tools-off");
    const toggle = offRow.getByRole("switch", { name: "file_search on" });
    check((await toggle.getAttribute("aria-checked")) === "false", "the switch of an off tool is not off");
    await toggle.click();
    await page.getByLabel("On or off").selectOption("on");
    await page.locator('.tool-row:not(.off)[data-tool="file_search"] [role="switch"][aria-checked="true"]').waitFor();
    await page.getByLabel("On or off").selectOption("");
    await page.getByRole("searchbox", { name: "Search tools" }).fill("directory");
    await page.getByRole("link", { name: "directory_list" }).click();
    await page.getByRole("heading", { name: /directory_list/ }).waitFor();
    await page.getByRole("button", { name: "Call" }).click();
    await page.locator('[aria-label="Result"] ul.tree li', { hasText: "notes" }).waitFor();
    await page.getByRole("link", { name: "← All tools" }).click();
    await page.getByRole("searchbox", { name: "Search tools" }).fill("grep");
    await page.getByRole("link", { name: "grep", exact: true }).click();
    await page.getByLabel("Change policy").selectOption("deny");
    await page.getByRole("status").filter({ hasText: "Policy set to deny" }).waitFor();
    await page.locator(".facts strong", { hasText: "deny" }).waitFor();
    const policyOrigin = await page.getByTestId("policy-origin").innerText();
    const screenshot = await shot(page, "tool-details");
    await page.getByRole("link", { name: "← All tools" }).click();
    await page.locator(".tool-row").first().waitFor();
    const catalogShot = await shot(page, "tools");
    await context.close();
    return { policyOrigin, offBadge, offKind, screenshots: [offShot, screenshot, catalogShot], problems };
  },

  // Adding a server by pasting an `mcpServers` block discovers its tools.
  async servers() {
    const { context, page, problems } = await open();
    await visit(page, "MCP servers");
    const block = process.env.PASTE;
    check(block, "PASTE (the mcpServers block) is not set");
    await page.getByLabel(/An mcpServers block/).fill(block);
    await page.getByRole("button", { name: "Add", exact: true }).click();
    const status = page.getByRole("status").filter({ hasText: /^Added / });
    await status.waitFor({ timeout: 60_000 });
    const added = await status.innerText();
    const count = await page.locator('li.server[data-server="everything"] [data-testid="tool-count"]').innerText();
    // Discovery may still be running when the page first lists the server; it shows the end.
    const badge = page.locator('li.server[data-server="everything"] .badge').first();
    await page.waitForFunction((el) => el.textContent !== "discovering", await badge.elementHandle());
    const discovery = await badge.innerText();
    // Its prompts are browsable at once.
    const prompts = page.locator("summary", { hasText: /^Prompts \([1-9]/ });
    await prompts.click();
    const prompt = await becomesShown(page.locator(".offered-prompts li code").first());
    // Transport, on/off and the end of its stderr log.
    const row = page.locator('li.server[data-server="everything"]');
    const transport = await row.getByTestId("transport").innerText();
    const enabled = await row.getByTestId("enabled").innerText();
    await row.locator("details.stderr > summary").click();
    const tail = row.locator("pre.stderr-tail");
    await tail.waitFor();
    const stderr = await tail.innerText();
    const screenshot = await shot(page, "servers");
    // Import: the project's .mcp.json (Claude Code's) holds one more server.
    await page.getByRole("button", { name: "Import", exact: true }).click();
    const report = page.locator(".import-report");
    await report.waitFor({ timeout: 60_000 });
    const imported = await report.innerText();
    const memory = page.locator('li.server[data-server="memory"] [data-testid="status"]');
    await memory.waitFor();
    await page.waitForFunction((el) => el.textContent === "success" || el.textContent === "failed", await memory.elementHandle(), {
      timeout: 60_000,
    });
    const importedDiscovery = await memory.innerText();
    const importShot = await shot(page, "servers-import");
    // A server whose discovery fails is said to have failed, with its stderr (issue 30: it was
    // announced as added, in green, with 0 tools).
    await page
      .getByLabel(/An mcpServers block/)
      .fill(JSON.stringify({ mcpServers: { broken: { command: "sh", args: ["-c", "echo it broke >&2; exit 3"] } } }));
    await page.getByRole("button", { name: "Add", exact: true }).click();
    const failure = page.locator(".add-failed");
    await failure.waitFor({ timeout: 60_000 });
    const brokenSaid = await failure.locator("p").innerText();
    const brokenLog = await failure.locator("pre.stderr-tail").innerText();
    const brokenAnnounced = await page.getByRole("status").filter({ hasText: /^Added broken/ }).count();
    const brokenShot = await shot(page, "servers-add-failed");
    await context.close();
    return {
      added,
      count,
      discovery,
      prompt,
      transport,
      enabled,
      stderr,
      imported,
      importedDiscovery,
      brokenSaid,
      brokenLog,
      brokenAnnounced,
      screenshots: [screenshot, importShot, brokenShot],
      problems,
    };
  },

  // A server that needs OAuth: its Sign in button opens the authorization server in a new tab
  // (which approves at once and sends the browser back to toolmux), and the page follows the
  // server until it is signed in and discovered.
  async signin() {
    const { context, page, problems } = await open();
    await visit(page, "MCP servers");
    const status = page.locator('li.server[data-server="oauthy"] [data-testid="status"]');
    await status.waitFor();
    const before = await status.innerText();
    const waitingShot = await shot(page, "servers-sign-in");
    const popup = context.waitForEvent("page");
    await page.getByRole("button", { name: "Sign in to oauthy" }).click();
    const tab = await popup;
    await page.waitForFunction((el) => el.textContent === "success", await status.elementHandle(), { timeout: 60_000 });
    const after = await status.innerText();
    const signedInShot = await shot(page, "servers-signed-in");
    const tabUrl = tab.url();
    await context.close();
    return { before, after, tabUrl, screenshots: [waitingShot, signedInShot], problems };
  },

  // The activity page shows a call made from the command line a moment before, and, once its
  // live tail is connected, one made while it is open, through the event stream alone.
  async activity() {
    const { context, page, problems } = await open();
    let live = false;
    let listReadsAfterLive = 0;
    page.on("request", (r) => {
      if (live && new URL(r.url()).pathname === "/api/logs") listReadsAfterLive++;
    });
    await visit(page, "Activity");
    const row = page.locator('tr[data-tool="file_search"]', { hasText: "cli" }).first();
    await row.waitFor();
    await row.getByRole("button", { name: "file_search" }).click();
    const detail = page.getByRole("region", { name: "Call details" });
    await detail.waitFor();
    const text = await detail.innerText();
    check(/release\.md/.test(text), `the detail does not show the result: ${text}`);
    await page.getByTestId("tail-state").filter({ hasText: /^live$/ }).waitFor();
    live = true;
    // The test's other thread makes a CLI call once it sees this mark.
    writeFileSync(join(scratch, "tail-live"), "");
    await page.locator('tr[data-tool="file_read"]', { hasText: "cli" }).first().waitFor({ timeout: 60_000 });
    const readsWhileLive = listReadsAfterLive;
    const folded = await rowFolded(row);
    const screenshot = await shot(page, "activity");
    // Typing a filter reloads the list and reopens the stream once, when the typing pauses,
    // not once per key.
    let streamOpens = 0;
    page.on("request", (r) => {
      if (new URL(r.url()).pathname === "/api/logs/stream") streamOpens++;
    });
    await page.getByPlaceholder("Tool (name or glob)").pressSequentially("file_read", { delay: 40 });
    await page.locator('tr[data-tool="file_search"]').first().waitFor({ state: "detached" });
    await page.getByTestId("tail-state").filter({ hasText: /^live$/ }).waitFor();
    check(streamOpens === 1, `typing a 9-letter filter opened the stream ${streamOpens} times`);
    await context.close();
    return { liveRow: true, listReadsAfterLive: readsWhileLive, streamOpens, folded, screenshots: [screenshot], problems };
  },

  // Coding sessions: one started from the page and followed live to its end, one cancelled.
  async sessions() {
    const { context, page, problems } = await open();
    await visit(page, "Sessions");
    const start = async (prompt) => {
      await page.getByRole("heading", { name: "Start a session" }).waitFor();
      await page.getByLabel("Runner").selectOption("claude");
      await page.getByLabel("Prompt", { exact: true }).fill(prompt);
      const before = new URL(page.url()).pathname;
      await page.getByRole("button", { name: "Start" }).click();
      await page.waitForURL((u) => u.pathname.startsWith("/sessions/") && u.pathname !== before);
    };
    const statusOnceNot = async (...running) => {
      const status = page.getByTestId("session-status");
      await page.waitForFunction(([el, running]) => el.textContent && !running.includes(el.textContent), [await status.elementHandle(), running]);
      return status.innerText();
    };
    await start("lines 5");
    await page.locator("pre.session-log", { hasText: "line 5" }).waitFor();
    const finished = await statusOnceNot("…", "pending", "running");
    const doneShot = await shot(page, "session");
    await page.getByRole("link", { name: "← All sessions" }).click();
    await start("slow");
    await page.locator("pre.session-log", { hasText: "tick 2" }).waitFor();
    await page.getByRole("button", { name: "Cancel session" }).click();
    const cancelled = await statusOnceNot("…", "pending", "running");
    await page.getByRole("link", { name: "← All sessions" }).click();
    await page.locator("table.sessions-table tbody tr").nth(1).waitFor();
    const rows = await page.locator("table.sessions-table tbody tr").count();
    const folded = await rowFolded(page.locator("table.sessions-table tbody tr").first());
    const listShot = await shot(page, "sessions");
    await context.close();
    return { finished, cancelled, rows, folded, screenshots: [doneShot, listShot], problems };
  },

  // A call of an MCP server's long-running tool shows its progress live on its card.
  async progress() {
    const { context, page, problems } = await open();
    await ask(page, "Run the long operation");
    const selector = 'article.tool-card[data-tool="everything__trigger-long-running-operation"]';
    const card = page.locator(selector);
    await card.locator("progress").waitFor({ timeout: 30_000 });
    // Read while the call runs (the badge comes with the call's input, not its first delta).
    const badge = await card.locator(".badge").first().innerText();
    const runningShot = await shot(page, "chat-progress");
    // Sampled in the page while the call runs: the bar goes once the card shows the result.
    const { seen, max } = await page.evaluate(async (selector) => {
      const seen = [];
      let max = null;
      const started = performance.now();
      while (performance.now() - started < 30_000) {
        const bar = document.querySelector(`${selector} progress`);
        if (!bar) break;
        seen.push(Number(bar.getAttribute("value")));
        max = bar.getAttribute("max");
        await new Promise((r) => setTimeout(r, 100));
      }
      return { seen, max };
    }, selector);
    await page.locator(".message.assistant", { hasText: "The long operation is done." }).waitFor();

    // An image from the server's tool, in its card: decoded (its width), with no stand-in text.
    await ask(page, "Show the tiny image");
    await page.locator(".message.assistant", { hasText: "That is the MCP logo." }).waitFor();
    const imageCard = page.locator('article.tool-card[data-tool="everything__get-tiny-image"]');
    const imageOf = async () => {
      const img = imageCard.locator("img.result-image");
      await img.waitFor();
      await page.waitForFunction((el) => el.complete, await img.elementHandle());
      return {
        width: await img.evaluate((el) => el.naturalWidth),
        standIn: /not shown/.test(await imageCard.locator(".result").innerText()),
      };
    };
    const image = await imageOf();
    const imageShot = await shot(page, "chat-tool-image");
    await page.reload();
    await page.locator(".message.assistant", { hasText: "That is the MCP logo." }).waitFor();
    const imageReopened = await imageOf();
    await context.close();
    return { badge, progress: [...new Set(seen)], max, image, imageReopened, screenshots: [runningShot, imageShot], problems };
  },

  // The chat basics (issue 30): copy a message and a code block, edit and resend, regenerate,
  // a new conversation by its shortcut, Esc stops a streaming answer, the list searched.
  async basics() {
    // axe is injected by the test (see a11y): the page's CSP refuses it.
    const { context, page, problems } = await open({ bypassCSP: true });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin });
    const clipboard = () => page.evaluate(() => navigator.clipboard.readText());
    const texts = () =>
      page.locator(".message").evaluateAll((all) => all.map((m) => (m.querySelector(".markdown, p")?.textContent ?? "").trim()));
    await ask(page, "Say hello");
    const hello = page.locator(".message.assistant", { hasText: "Hello there." });
    // The picker's first choice names the model the conversation keeps.
    const keptModel = page.locator(".model-picker option", { hasText: "this conversation's" });
    await keptModel.waitFor({ state: "attached" });
    const modelKept = await keptModel.innerText();
    await hello.getByRole("button", { name: "Copy message" }).click();
    await hello.getByRole("button", { name: "Copied" }).waitFor();
    const copiedMessage = await clipboard();
    await ask(page, "Show me some code");
    const code = page.locator(".message.assistant", { hasText: "fn main" });
    // Its Regenerate button shows once the turn has ended.
    await code.getByRole("button", { name: "Regenerate" }).waitFor();
    await code.getByRole("button", { name: "Copy code" }).click();
    await code.getByRole("button", { name: "Copied" }).waitFor();
    const copiedCode = await clipboard();

    // The turn each request takes again (`replaceTurn`), read off the request the page sends,
    // once the server has answered it (the page stops reading an answer that ends in an error,
    // so its end is not waited for: what the page shows after it is).
    const nextTurn = () =>
      page
        .waitForResponse((r) => new URL(r.url()).pathname === "/api/chat" && r.request().method() === "POST")
        .then((r) => r.request().postDataJSON().replaceTurn ?? null);
    await page.locator(".message.user").first().getByRole("button", { name: "Edit" }).click();
    await page.getByLabel("Edit your message").fill("Say goodbye");
    let sent = nextTurn();
    await page.getByRole("button", { name: "Save and send" }).click();
    const editedTurn = await sent;
    const answer = page.locator(".message.assistant", { hasText: "Goodbye now." });
    await answer.getByRole("button", { name: "Regenerate" }).waitFor();
    const afterEdit = await texts();
    sent = nextTurn();
    await answer.getByRole("button", { name: "Regenerate" }).click();
    const regeneratedTurn = await sent;
    await answer.getByRole("button", { name: "Regenerate" }).waitFor();
    const afterRegenerate = await texts();
    const address = new URL(page.url()).pathname;
    const serious = await seriousViolations(page);
    const basicsShot = await shot(page, "chat-basics");

    await page.keyboard.press("Control+Shift+O");
    await page.getByText("Ask anything; the model can use every tool in the catalog.").waitFor();
    const afterShortcut = new URL(page.url()).pathname;
    await ask(page, "Tell a slow story");
    await page.locator(".message.assistant .markdown", { hasText: "Once upon a time." }).waitFor();
    await page.waitForURL((u) => /^\/chat\/.+/.test(u.pathname));
    const storyAddress = new URL(page.url()).pathname;
    await page.keyboard.press("Escape");
    const stoppedShowsSend = await becomesShown(page.getByRole("button", { name: "Send", exact: true }));

    const list = await conversationList(page);
    await list.getByLabel("Search conversations").fill("slow");
    await list.getByRole("link", { name: "Say hello" }).waitFor({ state: "detached" });
    const searched = await list.getByRole("link").allInnerTexts();
    const searchShot = await shot(page, "chat-search");

    await newConversation(page);
    await ask(page, "Are you rate limited?");
    const failure = page.getByRole("alert").filter({ hasText: "429" });
    const failedSaid = await failure.locator("p").innerText();
    sent = nextTurn();
    await failure.getByRole("button", { name: "Retry" }).click();
    const retriedTurn = await sent;
    await failure.getByRole("button", { name: "Retry" }).waitFor();
    const retryAddress = new URL(page.url()).pathname;
    const failedShot = await shot(page, "chat-failed-turn");
    await context.close();
    return {
      modelKept,
      copiedMessage,
      copiedCode,
      afterEdit,
      afterRegenerate,
      editedTurn,
      regeneratedTurn,
      address,
      afterShortcut,
      storyAddress,
      stoppedShowsSend,
      searched,
      serious,
      failedSaid,
      retriedTurn,
      retryAddress,
      screenshots: [basicsShot, searchShot, failedShot],
      problems,
    };
  },

  // No provider configured (issue 30): a new conversation says what to configure, and a message
  // sent anyway gets the server's reason in words.
  async firstrun() {
    const { context, page, problems } = await open({ bypassCSP: true });
    const card = page.getByRole("region", { name: "Connect a model to start chatting" });
    const title = await card.getByRole("heading").innerText();
    const serious = await seriousViolations(page);
    const cardShot = await shot(page, "chat-first-run");
    await ask(page, "Say hello");
    const error = await page.locator(".turn-error p").innerText();
    const errorShot = await shot(page, "chat-no-provider-error");
    await context.close();
    return { card: title, error, serious, screenshots: [cardShot, errorShot], problems };
  },

  // axe-core on every page, light and dark: no serious or critical violations.
  async a11y() {
    const axe = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
    // axe is injected by the test, not served by toolmux: the page's CSP (rightly) refuses it.
    const { context, page, problems } = await open({ bypassCSP: true });
    // The chat page is checked with a conversation on it: cards, renderers, the answer.
    await ask(page, "Where is the release codename defined?");
    await page.locator(".message.assistant .markdown", { hasText: "The codename is Bluefin." }).waitFor();
    const conversation = new URL(page.url()).pathname;
    // The keyboard check below starts from the last page's top: keep /approvals last.
    const pages = [conversation, "/tools", "/tools/grep", "/servers", "/activity", "/sessions", "/specs", "/specs/002-search-index", "/approvals"];
    const findings = {};
    const screenshots = [];
    for (const scheme of ["light", "dark"]) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const path of pages) {
        await showPage(page, path);
        await page.evaluate(axe);
        const result = await page.evaluate(async () => {
          const r = await globalThis.axe.run(document, { resultTypes: ["violations"] });
          return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length, help: v.help, targets: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) }));
        });
        findings[`${scheme} ${path}`] = result;
        if (scheme === "light") screenshots.push(await shot(page, `page${path.replaceAll("/", "-")}`));
      }
    }
    const serious = Object.entries(findings).flatMap(([where, vs]) =>
      vs.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => ({ where, ...v })),
    );
    // Keyboard: Tab from the top reaches the skip link, then the navigation.
    await page.keyboard.press("Tab");
    const first = await page.evaluate(() => document.activeElement?.textContent);
    await context.close();
    return { serious, findings, first, screenshots, problems };
  },

  // Figures: the first load's JavaScript, the catalog of 1,000 tools, and main-thread long
  // tasks while a long answer with many cards streams in.
  async perf() {
    const { context, page, problems } = await open();
    await page.getByLabel("Message", { exact: true }).waitFor();
    await page.waitForTimeout(500);
    const firstLoad = await page.evaluate(() =>
      performance
        .getEntriesByType("resource")
        .concat(performance.getEntriesByType("navigation"))
        .filter((e) => e.name.endsWith(".js"))
        .map((e) => ({ name: e.name.split("/").pop(), transfer: e.encodedBodySize, decoded: e.decodedBodySize })),
    );
    const catalogMs = await page.evaluate(async () => {
      const start = performance.now();
      const link = [...document.querySelectorAll("nav a")].find((a) => a.textContent === "Tools");
      link.click();
      for (;;) {
        await new Promise((r) => requestAnimationFrame(r));
        const rows = document.querySelectorAll(".tool-row").length;
        const count = document.querySelector('[data-testid="tool-count"]')?.textContent ?? "";
        if (rows > 0 && /of 1\d{3} tools/.test(count)) return performance.now() - start;
        if (performance.now() - start > 20000) return -1;
      }
    });
    const toolCount = await page.getByTestId("tool-count").innerText();
    const rowsInDom = await page.locator(".tool-row").count();
    // Search as you type over the 1,000: time from a key to the filtered list.
    const searchMs = await page.evaluate(async () => {
      const input = document.querySelector('input[type="search"]');
      const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value").set;
      const start = performance.now();
      setter.call(input, "bulk_0999");
      input.dispatchEvent(new Event("input", { bubbles: true }));
      for (;;) {
        await new Promise((r) => requestAnimationFrame(r));
        if (/^1 of /.test(document.querySelector('[data-testid="tool-count"]')?.textContent ?? "")) return performance.now() - start;
        if (performance.now() - start > 10000) return -1;
      }
    });
    const catalogShot = await shot(page, "tools-1000");

    await visit(page, "Chat");
    await page.evaluate(() => {
      globalThis.__long = [];
      new PerformanceObserver((list) => {
        for (const e of list.getEntries())
          globalThis.__long.push({
            duration: e.duration,
            at: e.startTime - globalThis.__start,
            cards: document.querySelectorAll("article.tool-card").length,
            chars: document.querySelector(".message.assistant:last-child .markdown")?.textContent?.length ?? 0,
          });
      }).observe({ type: "longtask", buffered: false });
    });
    const started = Date.now();
    await page.evaluate(() => (globalThis.__start = performance.now()));
    await ask(page, "Stream a long answer");
    await page.locator(".message.assistant", { hasText: "END OF THE LONG ANSWER" }).waitFor({ timeout: 120_000 });
    const streamMs = Date.now() - started;
    const cards = await page.locator("article.tool-card").count();
    const answerChars = await page.locator(".message.assistant .markdown").last().evaluate((e) => e.textContent.length);
    // The list followed the answer to its end.
    await page.waitForTimeout(300);
    const followed = await page.locator(".messages").evaluate((e) => e.scrollHeight - e.scrollTop - e.clientHeight < 100);
    const tasks = await page.evaluate(() => globalThis.__long);
    const long = tasks.map((t) => t.duration);
    const streamShot = await shot(page, "chat-long");
    await context.close();
    return {
      firstLoad,
      firstLoadTransferBytes: firstLoad.reduce((n, e) => n + e.transfer, 0),
      catalogMs,
      toolCount,
      rowsInDom,
      searchMs,
      streamMs,
      cards,
      answerChars,
      followed,
      longTasks: { count: long.length, maxMs: Math.max(0, ...long), totalMs: long.reduce((a, b) => a + b, 0), tasks },
      screenshots: [catalogShot, streamShot],
      problems,
    };
  },
};

const run = phases[phase];
if (!run) {
  console.error(`unknown phase ${phase}`);
  process.exit(2);
}
try {
  const result = await run();
  if (result.problems.length > 0) throw new Error(`the page reported errors: ${result.problems.join("; ")}`);
  process.stdout.write(JSON.stringify({ origin, ...result }) + "\n");
} catch (e) {
  console.error(`${phase}: ${e.stack ?? e}`);
  process.exit(1);
}
