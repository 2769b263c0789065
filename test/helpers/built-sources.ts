// The sources compiled once per test run for the processes tests start (the CLI, the daemon).
// Started from the TypeScript sources, every child loaded tsx and compiled ~160 files again: about
// 2 s of CPU per `faxgate` command, and the daemon and fault tests run hundreds of them. The
// global setup compiles src/ once with esbuild (tsx's own compiler, so the same output tsx makes)
// into BUILT_SOURCES, laid out as `npm run build` lays out dist/: one .js per .ts at the same
// depth below the project, so the built daemon's own paths (intake/reader-tasks.js,
// intake/pdf/pdf-text-child.js) are the ones that run here.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const src = path.join(root, "src");

/** The compiled src/ (gitignored). One level below the project, like dist/. */
export const BUILT_SOURCES = path.join(root, ".vitest-dist");
/** The compiled CLI entry (src/cli/entry.ts). */
export const BUILT_CLI_ENTRY = path.join(BUILT_SOURCES, "cli", "entry.js");

/** True once a global setup has compiled the sources (not, e.g., in a child started outside vitest). */
export function haveBuiltSources(): boolean {
  return existsSync(BUILT_CLI_ENTRY);
}

/**
 * Compiles src/ into BUILT_SOURCES. Each file is replaced by rename and only when its text
 * changed, so a second test run starting meanwhile (the fault suite beside the main one) never
 * reads a half-written file.
 */
export async function buildSources(): Promise<void> {
  const { build } = (await import("esbuild" as string)) as typeof import("esbuild");
  const names = (readdirSync(src, { recursive: true }) as string[]).map((n) => String(n));
  const ts = names.filter((n) => n.endsWith(".ts") && !n.endsWith(".d.ts")).map((n) => path.join(src, n));
  const out = await build({
    entryPoints: ts,
    outdir: BUILT_SOURCES,
    outbase: src,
    format: "esm",
    platform: "node",
    target: "node20",
    write: false,
    logLevel: "silent",
  });
  let n = 0;
  const place = (file: string, text: string | Uint8Array) => {
    mkdirSync(path.dirname(file), { recursive: true });
    const now = existsSync(file) ? readFileSync(file) : null;
    if (now && Buffer.compare(now, Buffer.from(text)) === 0) return;
    const tmp = `${file}.${process.pid}.${++n}.tmp`;
    writeFileSync(tmp, text);
    renameSync(tmp, file);
  };
  for (const f of out.outputFiles) place(f.path, f.contents);
  // anything else in src/ (scripts, data) sits where the compiled code expects it
  for (const n of names) {
    const from = path.join(src, n);
    if (n.endsWith(".ts") || !statSync(from).isFile()) continue;
    place(path.join(BUILT_SOURCES, n), readFileSync(from));
  }
}
