/**
 * Headless Chromium for the page tests, driven by playwright-core (npm), which launches the
 * system's Chromium over a pipe and needs no browser download. A browser is found on PATH or
 * through SVC_TEST_CHROMIUM; without one, page tests are skipped with a printed reason.
 * Errors a page reports (uncaught exceptions, console errors, CSP violations) fail the test
 * unless it takes them.
 * @module
 */
import type { Browser, BrowserContextOptions, ConsoleMessage, Page } from "playwright-core";
import { ROOT } from "./helpers.ts";

/** The variable naming a Chromium executable; once set, a browser that fails to start fails the tests. */
export const CHROMIUM_ENV = "SVC_TEST_CHROMIUM";

/** Names tried on PATH, in order, when SVC_TEST_CHROMIUM is unset. */
export const CHROMIUM_NAMES: readonly string[] = [
  "chromium",
  "chromium-browser",
  "google-chrome",
  "google-chrome-stable",
];

/** Where screenshots go: git-ignored, kept after the run for a person to look at. */
export const ARTIFACT_DIR = `${ROOT}/test-artifacts/page`;

/** How long closing may take, by default, before the browser's process group is killed. */
const CLOSE_BOUND_MS = 20_000;

/** The viewport every page gets unless the test asks otherwise (the "readable at" size). */
const DEFAULT_VIEWPORT = { width: 1280, height: 800 };

/** A Chromium executable (with where its name came from), or why there is none. */
export type ChromiumLookup = { path: string; from: string; skip?: undefined } | {
  path?: undefined;
  skip: string;
};

/**
 * Finds the Chromium executable: the one SVC_TEST_CHROMIUM names (a path or a name on PATH;
 * then never skipped, so a CI run cannot pass without the browser), else the first of
 * {@linkcode CHROMIUM_NAMES} on PATH.
 */
export async function findChromium(): Promise<ChromiumLookup> {
  const named = Deno.env.get(CHROMIUM_ENV);
  if (named !== undefined && named !== "") {
    const path = named.includes("/") ? named : (await findExecutable(named)) ?? named;
    return { path, from: `${CHROMIUM_ENV}=${named}` };
  }
  for (const name of CHROMIUM_NAMES) {
    const path = await findExecutable(name);
    if (path !== undefined) return { path, from: "PATH" };
  }
  return {
    skip: `no Chromium on PATH (${CHROMIUM_NAMES.join(", ")}); ` +
      `install Debian's chromium or set ${CHROMIUM_ENV}`,
  };
}

/** The first executable file called `name` in a PATH directory, if any. */
export async function findExecutable(name: string): Promise<string | undefined> {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    if (dir === "") continue;
    const path = `${dir}/${name}`;
    const info = await Deno.stat(path).catch(() => undefined);
    if (info?.isFile && ((info.mode ?? 0) & 0o111) !== 0) return path;
  }
  return undefined;
}

/** This test process's answer, looked up once when the module loads (tests register synchronously). */
export const CHROMIUM: ChromiumLookup = await findChromium();

/**
 * Declares a test that needs the browser. Without one it is registered as ignored, its name ending
 * in `[ignored: <why>]` (as the compile test does), so the runner's own line for it says why.
 */
export function pageTest(
  name: string,
  fn: (t: Deno.TestContext) => Promise<void>,
  options: Omit<Deno.TestDefinition, "name" | "fn" | "ignore"> = {},
): void {
  skippableTest(name, fn, { ...options, skip: CHROMIUM.skip });
}

/** Declares a test, ignored with `[ignored: <skip>]` after its name when `skip` is given. */
export function skippableTest(
  name: string,
  fn: (t: Deno.TestContext) => Promise<void>,
  options: Omit<Deno.TestDefinition, "name" | "fn" | "ignore"> & { skip?: string } = {},
): void {
  const { skip, ...rest } = options;
  Deno.test({
    ...rest,
    name: skip === undefined ? name : `${name} [ignored: ${skip}]`,
    fn: async (t) => {
      try {
        await fn(t);
      } catch (error) {
        // A failing test whose browser then reports page errors while closing throws a
        // SuppressedError, which the runner prints without either error: name both.
        if (error instanceof SuppressedError) {
          const cause = error.suppressed instanceof Error ? error.suppressed : undefined;
          const closing = error.error instanceof Error ? error.error.message : String(error.error);
          throw new Error(
            `${cause?.stack ?? String(error.suppressed)}\n\nand then, while closing: ${closing}`,
          );
        }
        throw error;
      }
    },
    ignore: skip !== undefined,
  });
}

/** One error a page reported. */
export interface PageProblem {
  /** `pageerror` for an uncaught exception, `console` for a console error (CSP violations, failed loads). */
  kind: "pageerror" | "console" | "crash";
  /** Its message. */
  text: string;
  /** The page URL it came from. */
  url: string;
}

/**
 * A launched browser for one test: `await using` closes it, ends its processes and removes its
 * profile. Disposing twice closes once.
 */
export interface TestBrowser extends AsyncDisposable {
  /** The playwright browser, for anything the helpers do not cover. */
  browser: Browser;
  /** The browser process's id; it leads its own session, so its children share it. */
  pid: number;
  /** The browser's XDG config and cache directory (crash handler database), removed on close. */
  configDir: string;
  /** A page in a fresh context (own storage), 1280×800 unless `options` say otherwise, watched for errors. */
  newPage(options?: BrowserContextOptions): Promise<Page>;
  /** Watches a page made some other way (a popup, a second page of a context). */
  watch(page: Page): void;
  /** The errors reported so far, which are then no longer held against the test. */
  takeErrors(): PageProblem[];
  /** Throws when a page has reported an error not yet taken, listing them. */
  assertNoErrors(): void;
}

/**
 * Launches the browser found by {@linkcode findChromium}. Throws when there is none: declare the
 * test with {@linkcode pageTest} so it is skipped instead. Disposing closes the browser (killing
 * its process group if closing hangs) and then fails with any page error not taken.
 */
export async function launchBrowser(
  options: { closeBoundMs?: number } = {},
): Promise<TestBrowser> {
  if (CHROMIUM.path === undefined) throw new Error(`Cannot launch a browser: ${CHROMIUM.skip}`);
  const executablePath = CHROMIUM.path;
  const info = await Deno.stat(executablePath).catch(() => undefined);
  if (!info?.isFile) {
    throw new Error(
      `Cannot launch a browser: ${executablePath} (from ${CHROMIUM.from}) is not a file`,
    );
  }
  const { chromium } = await loadPlaywright();
  // Debian's build always starts a crash handler that keeps its database under
  // $XDG_CONFIG_HOME/chromium (~/.config by default): point it at a directory of our own.
  // (--disable-crashpad-for-testing would keep the handler from starting, but with it Chromium
  // 156's network service crashes on every request.)
  const configDir = await Deno.makeTempDir({ prefix: "svc-chromium-" });
  let browser: Browser;
  let pid: number;
  try {
    browser = await chromium.launch({
      executablePath,
      headless: true,
      timeout: 60_000,
      env: { ...Deno.env.toObject(), XDG_CONFIG_HOME: configDir, XDG_CACHE_HOME: configDir },
    });
  } catch (error) {
    await Deno.remove(configDir, { recursive: true });
    throw error;
  }
  try {
    pid = await browserPid(browser);
  } catch (error) {
    await browser.close();
    await Deno.remove(configDir, { recursive: true });
    throw error;
  }
  const problems: PageProblem[] = [];
  const watch = (page: Page) => {
    page.on("pageerror", (error) => {
      problems.push({ kind: "pageerror", text: error.stack ?? String(error), url: page.url() });
    });
    page.on("console", (message: ConsoleMessage) => {
      if (message.type() !== "error") return;
      const at = message.location();
      const where = at.url ? ` (${at.url}:${at.lineNumber})` : "";
      problems.push({ kind: "console", text: `${message.text()}${where}`, url: page.url() });
    });
    page.on("crash", () => problems.push({ kind: "crash", text: "page crashed", url: page.url() }));
  };
  let closed: Promise<void> | undefined;
  const takeErrors = () => problems.splice(0, problems.length);
  const assertNoErrors = () => {
    if (problems.length === 0) return;
    const list = takeErrors().map((p) => `  ${p.kind} on ${p.url}: ${p.text}`).join("\n");
    throw new Error(`The page reported errors:\n${list}`);
  };
  return {
    browser,
    pid,
    configDir,
    watch,
    takeErrors,
    assertNoErrors,
    async newPage(options = {}) {
      const context = await browser.newContext({ viewport: DEFAULT_VIEWPORT, ...options });
      const page = await context.newPage();
      watch(page);
      return page;
    },
    async [Symbol.asyncDispose]() {
      // Once only: a test may close the browser to look at what is left, and `await using`
      // then disposes it again.
      closed ??= (async () => {
        try {
          await closeBounded(browser, pid, options.closeBoundMs ?? CLOSE_BOUND_MS);
        } finally {
          await Deno.remove(configDir, { recursive: true }).catch(() => {});
        }
      })();
      await closed;
      assertNoErrors();
    },
  };
}

/** Loads playwright-core on first use, so a run without a browser never loads it. */
async function loadPlaywright(): Promise<typeof import("playwright-core")> {
  // playwright-core bundles is-wsl, which at load stats /proc/sys/fs/binfmt_misc/WSLInterop: a
  // /proc path Deno grants only with --allow-all. is-wsl's own switch skips that probe; its answer
  // only matters for opening a desktop browser, which these tests never do.
  const preset = Deno.env.get("__IS_WSL_TEST__");
  if (preset === undefined) Deno.env.set("__IS_WSL_TEST__", "1");
  try {
    return await import("playwright-core");
  } finally {
    if (preset === undefined) Deno.env.delete("__IS_WSL_TEST__");
  }
}

/** The browser process's id, as Chromium reports it. */
async function browserPid(browser: Browser): Promise<number> {
  const session = await browser.newBrowserCDPSession();
  try {
    const { processInfo } = await session.send("SystemInfo.getProcessInfo");
    const own = processInfo.find((p) => p.type === "browser");
    if (own === undefined) throw new Error("Cannot find the browser process: Chromium listed none");
    return own.id;
  } finally {
    await session.detach();
  }
}

/**
 * Closes the browser; if that hangs, kills its process group (playwright starts it as a session
 * leader, so the group is the browser's own) and waits for the same close to finish: playwright
 * removes the profile once it sees the process exit.
 */
async function closeBounded(browser: Browser, pid: number, boundMs: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hung = new Promise<"hung">((resolve) => {
    timer = setTimeout(() => resolve("hung"), boundMs);
  });
  const closing = browser.close();
  try {
    if (await Promise.race([closing.then(() => "closed" as const), hung]) === "hung") {
      killGroupOr(pid);
    }
    await closing;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Kills process group `pid`, or the process alone when it leads no group (a launcher script
 * that runs Chromium as its child instead of exec'ing it).
 */
function killGroupOr(pid: number): void {
  for (const target of [-pid, pid]) {
    try {
      Deno.kill(target, "SIGKILL");
      return;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
}

/** Saves a screenshot of `page` as `test-artifacts/page/<name>.png` and returns its path. */
export async function saveScreenshot(
  page: Page,
  name: string,
  options: { fullPage?: boolean } = {},
): Promise<string> {
  if (!/^[a-z0-9][a-z0-9_-]{0,63}$/.test(name)) {
    throw new Error(`Cannot save a screenshot: "${name}" is not a lower-case file name`);
  }
  await Deno.mkdir(ARTIFACT_DIR, { recursive: true });
  const path = `${ARTIFACT_DIR}/${name}.png`;
  await page.screenshot({ path, fullPage: options.fullPage ?? true });
  return path;
}
