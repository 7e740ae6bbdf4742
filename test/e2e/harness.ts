// Browser tests: the real server (a child process over a temp data folder, serving the built web
// application) and Debian's Chromium driven by playwright-core. Nothing is downloaded.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { serve, type Running } from '../child-server.ts';
import { request, tempDir, type CallOptions, type Response } from '../helpers.ts';

export const ROOT_EMAIL = 'root@example.com';
export const ROOT_PASSWORD = 'root password 1';
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS = join(import.meta.dirname, '..', '..', 'test-artifacts');
const WEB_INDEX = join(import.meta.dirname, '..', '..', 'web', 'dist', 'index.html');

export interface E2E {
  base: string;
  /** The server's data folder (its database is `contact-ledger.db` there). */
  dataDir: string;
  server: Running;
  context: BrowserContext;
  page: Page;
  call(method: string, path: string, opts?: CallOptions): Promise<Response>;
  close(): Promise<void>;
}

/**
 * Starts the server and a fresh headless Chromium profile; `env` adds server settings. A failure is
 * also written to stderr: uvu reports an error thrown in a `before` hook only through the `after`
 * hook that then finds no E2E to close.
 */
export async function start(env: Record<string, string> = {}): Promise<E2E> {
  try {
    return await started(env);
  } catch (err) {
    console.error(`the browser tests could not start: ${(err as Error).stack ?? String(err)}`);
    throw err;
  }
}

async function started(env: Record<string, string>): Promise<E2E> {
  if (!existsSync(WEB_INDEX)) throw new Error('web/dist is not built: run the browser tests with "npm run test:e2e"');
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium`);
  const data = tempDir('cl-e2e-');
  const server = await serve({
    CONTACT_LEDGER_DATA: join(data, 'data'),
    CONTACT_LEDGER_ADMIN_EMAIL: ROOT_EMAIL,
    CONTACT_LEDGER_ADMIN_PASSWORD: ROOT_PASSWORD,
    HOST: '127.0.0.1',
    ...env,
  });
  const base = `http://127.0.0.1:${server.port}`;
  const context = await chromium.launchPersistentContext(join(data, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 800 },
    acceptDownloads: true,
    locale: 'en-GB',
    timezoneId: 'UTC',
  });
  context.setDefaultTimeout(15_000);
  const page = context.pages()[0] ?? (await context.newPage());
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  return {
    base,
    dataDir: join(data, 'data'),
    server,
    context,
    page,
    call: (method, path, opts) => request(base, method, path, opts),
    async close() {
      await context.close().catch(() => undefined);
      server.child.kill('SIGTERM');
      await server.exit;
      if (errors.length) throw new Error(`uncaught errors in the page: ${errors.join('\n')}`);
    },
  };
}

/** Saves the page at 1280×800 and at 390×844 into test-artifacts/ (full page). */
export async function shoot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const before = page.viewportSize() ?? { width: 1280, height: 800 };
  for (const [w, h] of [
    [1280, 800],
    [390, 844],
  ] as const) {
    await page.setViewportSize({ width: w, height: h });
    await page.evaluate(() => new Promise<void>((r) => (globalThis as unknown as { requestAnimationFrame(f: () => void): void }).requestAnimationFrame(() => r())));
    await page.screenshot({ path: join(ARTIFACTS, `${name}-${w}x${h}.png`), fullPage: true, animations: 'disabled' });
  }
  await page.setViewportSize(before);
}

/** Signs in through the form. */
export async function signInUi(page: Page, base: string, email: string, password: string): Promise<void> {
  await page.goto(`${base}/signin`);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).first().waitFor({ state: 'attached' });
}

/** An API token for checks made beside the browser. */
export async function apiToken(e: E2E, email: string, password: string): Promise<string> {
  const r = await e.call('POST', '/api/identity/v1/session', { body: { grantType: 'password', email, password } });
  if (r.status !== 200) throw new Error(`sign-in of ${email}: ${r.status} ${r.text}`);
  return r.body.accessToken as string;
}

/**
 * Waits until a dialog that keeps a history entry (Dialog's `backCloses`: the secrets shown once)
 * has taken it back after closing: its history.back() runs after the dialog is gone, and a goto or
 * reload in that moment is cut short (ERR_ABORTED) or undone.
 */
export async function dialogEntryGone(page: Page): Promise<void> {
  await until(async () => (await page.evaluate('history.state?.dialog')) === undefined, 'the closed dialog\'s history entry taken back', 5000);
}

/** Polls fn until it returns a truthy value (no fixed sleeps). */
export async function until<T>(fn: () => Promise<T | undefined | false>, what: string, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The page as these checks see it (the tests are typed without the DOM library). */
interface InPage {
  document: { activeElement: { contains?(n: unknown): boolean } | null; body: unknown; documentElement: { scrollWidth: number } };
  innerWidth: number;
}

/** Whether focus is on the element, or (`within`) on it or inside it. */
export const hasFocus = (l: Locator, within = false) =>
  l.evaluate((el, within) => {
    const a = (globalThis as unknown as InPage).document.activeElement;
    return el === a || (within && (el as unknown as { contains(n: unknown): boolean }).contains(a));
  }, within);

/** The page's full width and the window's: the page scrolls sideways when the first is larger. */
export const widths = (page: Page) =>
  page.evaluate(() => {
    const w = globalThis as unknown as InPage;
    return { scroll: w.document.documentElement.scrollWidth, width: w.innerWidth };
  });

export const readText = (path: string) => readFileSync(path, 'utf8');
