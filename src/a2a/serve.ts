/**
 * The A2A server on a port: the app over the platform's HTTP server, with the listening
 * address as the base URL its cards name.
 * @module
 */
import { SvcError } from "../errors/mod.ts";
import { platform } from "../platform/mod.ts";
import type { Services } from "../services/mod.ts";
import { type A2aApp, a2aApp, type A2aAppOptions } from "./app.ts";

/** The A2A server's default port (the dashboard is 41521, the daemon 41522). */
export const A2A_PORT = 41523;
/** The A2A server's default address: this machine only. */
export const A2A_HOST = "127.0.0.1";

/** Options of {@linkcode serveA2a}. */
export interface ServeA2aOptions extends Omit<A2aAppOptions, "baseUrl" | "places"> {
  /** Address to listen on. Default 127.0.0.1. */
  hostname?: string;
  /** Port to listen on; 0 picks a free one. Default 41523. */
  port?: number;
  /** The base URL the cards name, when clients reach the server by another name (a proxy). */
  publicUrl?: string;
  /** Where named workflows are found. Default: the current directory, `SVC_HOME`, `HOME`. */
  places?: A2aAppOptions["places"];
  /** Aborting it closes the server. */
  signal?: AbortSignal;
}

/** A listening A2A server. */
export interface A2aServer extends AsyncDisposable {
  /** Its base URL, e.g. `http://127.0.0.1:41523`. */
  readonly url: string;
  /** The app it serves. */
  readonly app: A2aApp;
  /** Cancels the svc work of its live tasks, waits for their final states, and stops listening. */
  close(): Promise<void>;
}

/** A public URL checked: http or https, no query or fragment; without its trailing slashes. */
function publicBase(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    url = new URL("invalid:");
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.search || url.hash) {
    throw new SvcError(
      "invalid_argument",
      `Cannot use '${
        text.slice(0, 200)
      }' as the public URL: it must be an http or https URL without query or fragment`,
    );
  }
  return url.href.replace(/\/+$/, "");
}

/** Serves the A2A app over `services` until closed. Resolves once it listens. */
export async function serveA2a(services: Services, options: ServeA2aOptions): Promise<A2aServer> {
  const hostname = options.hostname ?? A2A_HOST;
  const base = options.publicUrl !== undefined ? publicBase(options.publicUrl) : undefined;
  const serving: { app?: A2aApp } = {};
  const server = await platform().serve(
    (request) =>
      serving.app
        ? serving.app.fetch(request)
        : Promise.resolve(new Response(null, { status: 503 })),
    {
      hostname,
      port: options.port ?? A2A_PORT,
      ...(options.signal ? { signal: options.signal } : {}),
    },
  );
  const shown = hostname.includes(":") ? `[${hostname}]` : hostname;
  const url = `http://${shown}:${server.port}`;
  const p = platform();
  const userHome = p.homeDir();
  try {
    serving.app = await a2aApp(services, {
      ...options,
      baseUrl: base ?? url,
      places: options.places ?? {
        projectDir: p.cwd(),
        home: services.home,
        ...(userHome !== undefined ? { userHome } : {}),
      },
    });
  } catch (error) {
    await server.close();
    throw error;
  }
  let closing: Promise<void> | undefined;
  const close = () =>
    closing ??= (async () => {
      await serving.app?.executor.close();
      await server.close();
    })();
  return { url, app: serving.app, close, [Symbol.asyncDispose]: close };
}
