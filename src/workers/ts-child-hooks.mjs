// Used only when faxgate runs from its TypeScript sources (tests, `tsx`): the PDF reader child
// (./pdf-process.ts) is started with these module hooks instead of tsx, whose loader costs about
// 400 MB and 3 s per process (it transforms pdfjs too). Only our own .ts files are transformed,
// with esbuild (tsx's own dependency); everything in node_modules loads as it is.
// The built daemon runs dist/intake/pdf-text-child.js directly and never reads this file.
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { transform } from 'esbuild';

export async function resolve(specifier, context, next) {
  // TypeScript sources import each other as "./x.js".
  if (context.parentURL?.endsWith('.ts') && specifier.startsWith('.') && specifier.endsWith('.js')) {
    const ts = new URL(specifier.slice(0, -3) + '.ts', context.parentURL);
    if (existsSync(fileURLToPath(ts))) return { url: ts.href, format: 'module', shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (!url.endsWith('.ts')) return next(url, context);
  const source = await readFile(fileURLToPath(url), 'utf8');
  const out = await transform(source, { loader: 'ts', format: 'esm', target: 'node20' });
  return { format: 'module', source: out.code, shortCircuit: true };
}
