// The console's pages are plain files: `web/` in the repository (HTML, small ES modules, CSS) and
// pdf.js's legacy build from node_modules. The list of files is read once at start; a request can
// only ever name one of them (no path is built from the URL).
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyPluginAsync } from "fastify";

export interface StaticFile {
  body: Buffer;
  type: string;
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
};

/** The folder with the console's own files (the repository's `web/`, beside `src/` and `dist/`). */
export function webRoot(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "web");
}

function pdfjsBuild(): string {
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve("pdfjs-dist/package.json")), "legacy", "build");
}

/** URL path → file, for every file the console serves. */
export function loadStaticFiles(root = webRoot()): Map<string, StaticFile> {
  const out = new Map<string, StaticFile>();
  const add = (url: string, file: string) => {
    const type = TYPES[path.extname(file)];
    if (type) out.set(url, { body: readFileSync(file), type });
  };
  for (const name of readdirSync(root)) add(`/${name}`, path.join(root, name));
  const pdfjs = pdfjsBuild();
  add("/vendor/pdf.min.mjs", path.join(pdfjs, "pdf.min.mjs"));
  add("/vendor/pdf.worker.min.mjs", path.join(pdfjs, "pdf.worker.min.mjs"));
  return out;
}

/** The pages: no session needed to load them (their data needs one). */
export const staticPages: FastifyPluginAsync<{ files: Map<string, StaticFile> }> = async (app, { files }) => {
  const page = (url: string, file: string) =>
    app.get(url, async (_req, reply) => {
      const f = files.get(file);
      if (!f) return reply.code(404).send({ error: "not found" });
      return reply.type(f.type).send(f.body);
    });
  page("/", "/index.html");
  for (const url of files.keys()) page(url, url);
};
