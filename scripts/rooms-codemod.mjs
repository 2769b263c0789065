#!/usr/bin/env node
// Rooms that say who owns what (docs/architecture.md): moves shared domain code into low folders of
// its own and gives each top-level folder of src/ one entry file, index.ts, that other folders import
// instead of its inner files (test/shared/module-graph.test.ts refuses the rest). It is a codemod and
// not a one-off edit because many branches change these files at once: it reads the tree as it is,
// so it can be run again after they merge, and a second run on its own result changes nothing.
//
//   node scripts/rooms-codemod.mjs [--dry-run]
//
// 1. MOVES: whole files to their room; every import of them in src/, test/, bench/, scripts/ follows.
// 2. SPLITS: named top-level declarations carried out of a file into the room that owns them; the
//    file and its importers then import them from there.
// 3. Entry files: an import of another folder's inner file from src/ is pointed at that folder's
//    index.ts, and each index.ts is written as the list of names other folders import from it (so
//    it stays small: a name nobody outside uses is no part of the face). Tests may still import
//    inner files: they try the rooms from inside.
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SRC = path.join(ROOT, "src");
const SCANNED = ["src", "test", "bench", "scripts"];
const DRY = process.argv.includes("--dry-run");

/** Whole files, old path -> new path, from the project root. */
const MOVES = {
  // numbers, contacts and the destination policy: every door and stage asks them, so they live
  // below all of them instead of inside intake/
  "src/intake/recipients/contact-lookup.ts": "src/recipients/contact-lookup.ts",
  "src/intake/recipients/destination-policy.ts": "src/recipients/destination-policy.ts",
  "src/intake/recipients/fax-number.ts": "src/recipients/fax-number.ts",
  "src/intake/recipients/recipients.ts": "src/recipients/recipients.ts",
  // looking for received faxes is the inbound stage's work, not the mailer's
  "src/notify/inbound.ts": "src/inbound/poller.ts",
  "src/notify/inbound-cursor.ts": "src/inbound/poller-cursor.ts",
  // the emulator's start was its index.ts; the index is now its face like every other folder's
  "src/emulator/index.ts": "src/emulator/emulator.ts",
  // `faxgate emulator` is a command like the others; the emulator itself is loaded when it runs
  "src/emulator/command.ts": "src/cli/emulator-command.ts",
};

/** Declarations carried out of a file: what a received fax is, and what its notice says. */
const SPLITS = [
  {
    from: "src/store/received.ts",
    to: "src/received/received-fax.ts",
    header:
      "// What a received fax is, for every stage that handles one (inbound/, notify/, web/, store/): the\n" +
      "// service's record of it, its life in a group's shared inbox (new -> taken -> done), and its\n" +
      "// timeline. How it is kept (SQL, rows) stays in store/received.ts.\n",
    names: ["ReceivedState", "RECEIVED_STATES", "NewReceivedFax", "ReceivedFax", "ReceivedEvent"],
  },
  {
    from: "src/store/notification-payloads.ts",
    to: "src/received/notice.ts",
    header:
      "// What the notice of a received fax says, as the poller, the webhook, the shared inbox and its\n" +
      "// escalation all queue it; notify/ turns it into mail.\n",
    names: ["InboundPayload", "keptFaxPayload"],
  },
  {
    from: "src/notify/inbound-mail.ts",
    to: "src/received/notice.ts",
    names: ["isFailedReception"],
  },
  {
    // reading the service's record needs fax/, which sits above store/: so not in received/
    from: "src/notify/inbound-mail.ts",
    to: "src/inbound/service-record.ts",
    header: "// The notice of a received fax from the service's record of it, for the poller and the intake alike.\n",
    names: ["inboundPayload", "senderOf"],
  },
];

/** Mentions of moved paths in comments and docs, as [pattern, replacement]; a second run finds none. */
const MENTIONS = [
  [/\bintake\/recipients\/(?=[a-z])/g, "recipients/"],
  [/\bintake\/recipients\b\/?(?!-)/g, "recipients/"],
  [/\bnotify\/inbound-cursor\.ts\b/g, "inbound/poller-cursor.ts"],
  [/\bnotify\/inbound\.ts\b/g, "inbound/poller.ts"],
];

/**
 * Programs of their own that load only what they run: the CLI (each command imports its parts when
 * it runs, so `faxgate --help` starts in milliseconds) and the worker threads' tasks. An entry file
 * loads every file it re-exports, so these import the inner files they need, and they alone.
 */
const LAZY_LOADERS = [/^src\/cli\//, /^src\/workers\/tasks\.ts$/];
const isLazyLoader = (file) => LAZY_LOADERS.some((re) => re.test(path.relative(ROOT, file).split(path.sep).join("/")));

const INDEX_MARK = "Written by scripts/rooms-codemod.mjs";

// ---------------------------------------------------------------------------------------------
// files and their module specifiers

const changed = new Set();
/** Each written file's text before this run, to tell at the end what really changed. */
const before = new Map();

function walk(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === "node_modules" || p === path.join(ROOT, "test", "fixtures") ? [] : walk(p);
    return /\.(ts|mts|mjs|js)$/.test(e.name) && !e.name.endsWith(".d.ts") ? [p] : [];
  });
}
const scannedFiles = () => SCANNED.flatMap((d) => walk(path.join(ROOT, d)));
const srcFiles = () => walk(SRC).filter((f) => f.endsWith(".ts"));

function parse(file, text = readFileSync(file, "utf8")) {
  const kind = file.endsWith(".ts") || file.endsWith(".mts") ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  return ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
}

function write(file, text) {
  const was = existsSync(file) ? readFileSync(file, "utf8") : null;
  if (was === text) return;
  if (!before.has(file)) before.set(file, was);
  changed.add(file);
  if (DRY) return;
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}

const isRelative = (s) => s.startsWith("./") || s.startsWith("../");

/**
 * Every relative module specifier of a file: import/export declarations, import(), import("x").T
 * types, vi.mock-style calls and `new URL("./x.js", import.meta.url)`.
 */
function sites(sf) {
  const out = [];
  const add = (lit, kind, node) => {
    if (lit && ts.isStringLiteralLike(lit) && isRelative(lit.text)) out.push({ lit, kind, node });
  };
  const visit = (n) => {
    if (ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) add(n.moduleSpecifier, "declaration", n);
    else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword)
      add(n.arguments[0], "dynamic", n);
    else if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument)) add(n.argument.literal, "type", n);
    else if (
      ts.isCallExpression(n) &&
      /^vi\.(mock|doMock|unmock|doUnmock|importActual|importMock)$/.test(n.expression.getText())
    )
      add(n.arguments[0], "call", n);
    else if (
      ts.isNewExpression(n) &&
      n.expression.getText() === "URL" &&
      n.arguments?.length === 2 &&
      n.arguments[1].getText() === "import.meta.url"
    )
      add(n.arguments[0], "call", n);
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/** The file a specifier names, as its .ts path when the specifier says .js. */
function target(fromFile, spec) {
  const abs = path.resolve(path.dirname(fromFile), spec);
  return abs.endsWith(".js") && existsSync(abs.replace(/\.js$/, ".ts")) ? abs.replace(/\.js$/, ".ts") : abs;
}
function targetKey(fromFile, spec) {
  return path.resolve(path.dirname(fromFile), spec).replace(/\.js$/, ".ts");
}

/** A specifier from `fromFile` to the .ts file `to`, ending as `like` ends (.js, .ts, or nothing). */
function specFor(fromFile, to, like = "x.js") {
  const ext = path.extname(like);
  let rel = path.relative(path.dirname(fromFile), to).split(path.sep).join("/");
  if (ext === ".js") rel = rel.replace(/\.ts$/, ".js");
  else if (ext !== ".ts") rel = rel.replace(/\.ts$/, "");
  return rel.startsWith(".") ? rel : `./${rel}`;
}

function applyEdits(text, edits) {
  let out = text;
  for (const e of [...edits].sort((a, b) => b.start - a.start)) out = out.slice(0, e.start) + e.text + out.slice(e.end);
  return out;
}
const quoteOf = (lit) => lit.getText()[0];
const literalEdit = (lit, spec) => ({
  start: lit.getStart(),
  end: lit.end,
  text: `${quoteOf(lit)}${spec}${quoteOf(lit)}`,
});

// ---------------------------------------------------------------------------------------------
// 1. moves

function isGeneratedIndex(file) {
  return existsSync(file) && readFileSync(file, "utf8").includes(INDEX_MARK);
}

function applyMoves() {
  const moves = new Map();
  for (const [from, to] of Object.entries(MOVES)) {
    const a = path.join(ROOT, from);
    const b = path.join(ROOT, to);
    if (!existsSync(a) || isGeneratedIndex(a)) continue;
    if (existsSync(b)) {
      console.warn(`rooms: both ${from} and ${to} exist; left as they are`);
      continue;
    }
    moves.set(a, b);
  }
  if (moves.size === 0) return;
  const back = new Map([...moves].map(([a, b]) => [b, a]));
  for (const [a, b] of moves) {
    console.log(`rooms: move ${path.relative(ROOT, a)} -> ${path.relative(ROOT, b)}`);
    changed.add(b);
    before.set(b, null);
    if (DRY) continue;
    mkdirSync(path.dirname(b), { recursive: true });
    renameSync(a, b);
    for (let d = path.dirname(a); d !== SRC && readdirSync(d).length === 0; d = path.dirname(d)) rmdirSync(d);
  }
  if (DRY) return;
  for (const file of scannedFiles()) {
    const old = back.get(file) ?? file;
    const text = readFileSync(file, "utf8");
    const sf = parse(file, text);
    const edits = [];
    for (const { lit } of sites(sf)) {
      const key = targetKey(old, lit.text);
      const now =
        moves.get(key) ?? (existsSync(key) || !existsSync(path.resolve(path.dirname(old), lit.text)) ? key : null);
      if (!now) {
        // a target that is not a .ts file (a .mjs, a folder): it only moves if the file does
        if (old === file) continue;
        const abs = path.resolve(path.dirname(old), lit.text);
        edits.push(literalEdit(lit, specFor(file, abs, "x")));
        continue;
      }
      if (old === file && now === key) continue;
      const spec = specFor(file, now, lit.text);
      if (spec !== lit.text) edits.push(literalEdit(lit, spec));
    }
    if (edits.length) write(file, applyEdits(text, edits));
  }
}

/** Comments and docs name the new places (a comment that names a moved file would mislead). */
function applyMentions() {
  const docs = readdirSync(path.join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => path.join(ROOT, "docs", f));
  for (const file of [
    ...scannedFiles().filter((f) => !f.endsWith("rooms-codemod.mjs")),
    ...docs,
    path.join(ROOT, "README.md"),
  ]) {
    if (!existsSync(file)) continue;
    const text = readFileSync(file, "utf8");
    const next = MENTIONS.reduce((t, [re, to]) => t.replace(re, to), text);
    if (next !== text) write(file, next);
  }
}

// ---------------------------------------------------------------------------------------------
// 2. splits

function declaredNames(stmt) {
  if (ts.isVariableStatement(stmt)) return stmt.declarationList.declarations.map((d) => d.name.getText());
  return stmt.name ? [stmt.name.getText()] : [];
}
const isExported = (stmt) => ts.getModifiers?.(stmt)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword) ?? false;
const isTypeDecl = (stmt) => ts.isInterfaceDeclaration(stmt) || ts.isTypeAliasDeclaration(stmt);

/** Where a statement starts with the comment directly above it (not a file's opening comment). */
function startWithDoc(sf, stmt) {
  let start = stmt.getStart(sf);
  const comments = ts.getLeadingCommentRanges(sf.text, stmt.getFullStart()) ?? [];
  for (let i = comments.length - 1; i >= 0; i--) {
    const gap = sf.text.slice(comments[i].end, start);
    if ((gap.match(/\n/g) ?? []).length > 1) break;
    start = comments[i].pos;
  }
  return start;
}

/** The names a node refers to (not the property names it spells). */
function identifiers(node, into = new Set()) {
  const p = node.parent;
  const propertyName =
    p &&
    p.name === node &&
    (ts.isPropertyAccessExpression(p) ||
      ts.isPropertyAssignment(p) ||
      ts.isPropertySignature(p) ||
      ts.isPropertyDeclaration(p) ||
      ts.isMethodDeclaration(p) ||
      ts.isMethodSignature(p) ||
      ts.isEnumMember(p));
  if (ts.isIdentifier(node) && !propertyName) into.add(node.text);
  // forEachChild stops at the first callback that returns something
  ts.forEachChild(node, (c) => {
    identifiers(c, into);
  });
  return into;
}

/** Import elements of a declaration: {name (exported), local, type}. */
function elementsOf(decl) {
  const clause = ts.isImportDeclaration(decl) ? decl.importClause : decl;
  const bindings = ts.isImportDeclaration(decl) ? clause?.namedBindings : decl.exportClause;
  if (!bindings || !(ts.isNamedImports(bindings) || ts.isNamedExports(bindings))) return null;
  if (ts.isImportDeclaration(decl) && clause.name) return null;
  return bindings.elements.map((e) => ({
    name: (e.propertyName ?? e.name).text,
    local: e.name.text,
    type: Boolean(clause.isTypeOnly || e.isTypeOnly),
  }));
}

function renderDecl(keyword, elements, spec) {
  const allType = elements.every((e) => e.type);
  const list = elements
    .map((e) => `${e.type && !allType ? "type " : ""}${e.name === e.local ? e.name : `${e.name} as ${e.local}`}`)
    .join(", ");
  return `${keyword} ${allType ? "type " : ""}{ ${list} } from "${spec}";`;
}

/** Where new import lines go: after the last import, else after the file's opening comment. */
function importInsertAt(sf) {
  const imports = sf.statements.filter((s) => ts.isImportDeclaration(s));
  if (imports.length) return imports.at(-1).end;
  return ts.getLeadingCommentRanges(sf.text, 0)?.at(-1)?.end ?? 0;
}

function applySplit({ from, to, names, header = "" }) {
  const src = path.join(ROOT, from);
  const dst = path.join(ROOT, to);
  if (!existsSync(src)) return;
  const text = readFileSync(src, "utf8");
  const sf = parse(src, text);
  const moved = sf.statements.filter((s) => isExported(s) && declaredNames(s).some((n) => names.includes(n)));
  if (moved.length === 0) return;
  const movedNames = new Set(moved.flatMap(declaredNames));
  const typeNames = new Set(moved.filter(isTypeDecl).flatMap(declaredNames));
  console.log(`rooms: ${[...movedNames].join(", ")}: ${from} -> ${to}`);

  const used = new Set();
  for (const s of moved) identifiers(s, used);
  const localDecls = new Set(
    sf.statements.filter((s) => !moved.includes(s) && !ts.isImportDeclaration(s)).flatMap(declaredNames),
  );
  const stranded = [...used].filter((n) => localDecls.has(n) && !movedNames.has(n));
  if (stranded.length) throw new Error(`rooms: ${from}: ${[...movedNames]} use ${stranded} that stay; split them too`);

  // what the moved code imports comes along
  const needed = [];
  for (const decl of sf.statements.filter(ts.isImportDeclaration)) {
    const els = elementsOf(decl)?.filter((e) => used.has(e.local)) ?? [];
    if (els.length) needed.push({ to: target(src, decl.moduleSpecifier.text), spec: decl.moduleSpecifier.text, els });
  }

  // the source without them, importing what it still uses
  const edits = moved.map((s) => ({ start: startWithDoc(sf, s), end: s.end, text: "" }));
  let rest = applyEdits(text, edits);
  const restIds = new Set();
  for (const s of parse(src, rest).statements) if (!ts.isImportDeclaration(s)) identifiers(s, restIds);
  const stillUsed = [...movedNames].filter((n) => restIds.has(n));
  {
    // imports only the moved code used go
    const r = parse(src, rest);
    const ids = new Set();
    for (const s of r.statements) if (!ts.isImportDeclaration(s)) identifiers(s, ids);
    const prune = [];
    for (const decl of r.statements.filter(ts.isImportDeclaration)) {
      const els = elementsOf(decl);
      if (!els) continue;
      const keep = els.filter((e) => ids.has(e.local) || !used.has(e.local));
      if (keep.length === els.length) continue;
      const full = { start: decl.getStart(), end: decl.end };
      prune.push({ ...full, text: keep.length ? renderDecl("import", keep, decl.moduleSpecifier.text) : "" });
      if (!keep.length) {
        // the line goes with its newline
        full.end += rest[decl.end] === "\n" ? 1 : 0;
        prune.at(-1).end = full.end;
      }
    }
    rest = applyEdits(rest, prune);
  }
  if (stillUsed.length) {
    const r = parse(src, rest);
    const at = importInsertAt(r);
    const els = stillUsed.map((n) => ({ name: n, local: n, type: typeNames.has(n) }));
    rest = `${rest.slice(0, at)}\n${renderDecl("import", els, specFor(src, dst))}${rest.slice(at)}`;
  }
  write(src, rest.replace(/\n{3,}/g, "\n\n"));

  // the destination with them and their imports
  const body = moved.map((s) => text.slice(startWithDoc(sf, s), s.end)).join("\n\n");
  const exists = existsSync(dst);
  let out = exists ? readFileSync(dst, "utf8") : header;
  const have = exists ? parse(dst, out) : null;
  const haveNames = new Set(
    have ? have.statements.filter(ts.isImportDeclaration).flatMap((d) => elementsOf(d)?.map((e) => e.local) ?? []) : [],
  );
  const lines = [];
  for (const n of needed) {
    const els = n.els.filter((e) => !haveNames.has(e.local) && !(n.to === dst));
    const fromDst = n.to === src ? null : n.to;
    if (!els.length || !fromDst) continue;
    lines.push(renderDecl("import", els, isRelative(n.spec) ? specFor(dst, fromDst, n.spec) : n.spec));
  }
  if (lines.length) {
    const at = have ? importInsertAt(have) : out.length;
    out = `${out.slice(0, at)}${have && at > 0 ? "\n" : ""}${lines.join("\n")}${have ? "" : "\n"}${out.slice(at)}`;
  }
  out = `${out.replace(/\n+$/, "")}\n\n${body}\n`;
  write(dst, out);

  // importers of the moved names import them from their new room
  for (const file of scannedFiles()) {
    if (file === src) continue;
    const t = readFileSync(file, "utf8");
    const f = parse(file, t);
    const fileEdits = [];
    for (const decl of f.statements) {
      if (!(ts.isImportDeclaration(decl) || ts.isExportDeclaration(decl)) || !decl.moduleSpecifier) continue;
      const spec = decl.moduleSpecifier.text;
      if (!isRelative(spec) || targetKey(file, spec) !== src) continue;
      const els = elementsOf(decl);
      if (!els) continue;
      const go = els.filter((e) => movedNames.has(e.name));
      if (!go.length) continue;
      const stay = els.filter((e) => !movedNames.has(e.name));
      const kw = ts.isImportDeclaration(decl) ? "import" : "export";
      const parts = [];
      if (stay.length) parts.push(renderDecl(kw, stay, spec));
      if (file !== dst) parts.push(renderDecl(kw, go, specFor(file, dst, spec)));
      fileEdits.push({ start: decl.getStart(), end: decl.end, text: parts.join("\n") });
    }
    if (fileEdits.length) write(file, applyEdits(t, fileEdits));
  }
}

// ---------------------------------------------------------------------------------------------
// 3. entry files

/** The top-level folder of src/ a file is in, or null for src/'s own files and files outside. */
function folderOf(file) {
  const rel = path.relative(SRC, file).split(path.sep);
  return rel.length > 1 && rel[0] !== ".." ? rel[0] : null;
}
const indexOf = (folder) => path.join(SRC, folder, "index.ts");

/** The names a site takes from its module: [{name, type}] or a reason it cannot be told. */
function namesOf(site) {
  const { kind, node } = site;
  if (kind === "declaration") {
    if (ts.isExportDeclaration(node) && !node.exportClause) return "export * takes every name";
    if (ts.isImportDeclaration(node) && !node.importClause) return "an import for its side effects";
    if (
      ts.isImportDeclaration(node) &&
      node.importClause.namedBindings &&
      ts.isNamespaceImport(node.importClause.namedBindings)
    )
      return "a namespace import";
    const els = elementsOf(node);
    return els ?? "a default import";
  }
  if (kind === "type")
    return node.qualifier
      ? [{ name: node.qualifier.getText().split(".")[0], type: true }]
      : "import() type of a whole module";
  if (kind === "dynamic") {
    let p = node.parent;
    if (ts.isAwaitExpression(p)) p = p.parent;
    if (ts.isParenthesizedExpression(p) && ts.isPropertyAccessExpression(p.parent))
      return [{ name: p.parent.name.text, type: false }];
    if (ts.isVariableDeclaration(p) && ts.isObjectBindingPattern(p.name))
      return p.name.elements.map((e) => ({ name: (e.propertyName ?? e.name).getText(), type: false }));
    return "an import() whose names cannot be read";
  }
  return "not an import";
}

/** name -> [file, exported name there] of an index.ts's re-exports. */
function indexMap(folder) {
  const file = indexOf(folder);
  const map = new Map();
  if (!existsSync(file)) return map;
  const sf = parse(file);
  for (const s of sf.statements) {
    if (!ts.isExportDeclaration(s) || !s.moduleSpecifier || !s.exportClause) {
      if (!ts.isImportDeclaration(s))
        throw new Error(
          `rooms: ${path.relative(ROOT, file)} holds code of its own; move it to a file and list that in MOVES`,
        );
      continue;
    }
    const from = target(file, s.moduleSpecifier.text);
    // a file moved out of the room (MOVES) is no longer its to show: its importers follow it
    for (const e of s.exportClause.elements) map.set(e.name.text, [from, (e.propertyName ?? e.name).text]);
  }
  return map;
}

function applyEntries() {
  const files = srcFiles();
  const folders = readdirSync(SRC, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
  const faces = new Map(folders.map((f) => [f, indexMap(f)]));
  /** folder -> name -> {file, orig} */
  const uses = new Map(folders.map((f) => [f, new Map()]));
  const problems = [];
  const use = (folder, name, file, orig, where) => {
    const had = uses.get(folder).get(name);
    if (had && (had.file !== file || had.orig !== orig))
      problems.push(
        `${where}: ${name} of ${folder}/ is both ${path.relative(SRC, had.file)} and ${path.relative(SRC, file)}'s`,
      );
    else uses.get(folder).set(name, { file, orig });
  };
  const rewrites = new Map();
  const direct = new Map();
  const outside = SCANNED.filter((d) => d !== "src").flatMap((d) => walk(path.join(ROOT, d)));
  for (const file of [...files, ...outside]) {
    // an entry file is written anew below, from what the others import
    if (isGeneratedIndex(file) || isLazyLoader(file)) continue;
    const inSrc = file.startsWith(SRC + path.sep);
    const from = inSrc ? folderOf(file) : undefined;
    const sf = parse(file);
    for (const site of sites(sf)) {
      if (site.kind === "call") continue;
      let to = target(file, site.lit.text);
      const names0 = namesOf(site);
      // names an index showed from a file that has since moved out of its room: go to the file
      const moved =
        folderOf(to) && to === indexOf(folderOf(to)) && typeof names0 !== "string"
          ? [...new Set(names0.map((n) => faces.get(folderOf(to)).get(n.name)?.[0]))]
          : [];
      if (moved.length === 1 && moved[0] && folderOf(moved[0]) !== folderOf(to)) {
        to = moved[0];
        const spec =
          folderOf(to) === from
            ? specFor(file, to, site.lit.text)
            : specFor(file, indexOf(folderOf(to)), site.lit.text);
        if (inSrc) (direct.get(file) ?? direct.set(file, []).get(file)).push(literalEdit(site.lit, spec));
      }
      const folder = folderOf(to);
      if (!folder || folder === from || !to.endsWith(".ts")) continue;
      const index = indexOf(folder);
      // outside src/, only what is taken through an index.ts keeps a name on the face
      if (!inSrc && to !== index) continue;
      const where = `${path.relative(ROOT, file)}:${sf.getLineAndCharacterOfPosition(site.lit.getStart()).line + 1}`;
      const names = namesOf(site);
      if (typeof names === "string") {
        problems.push(`${where}: ${names} of ${path.relative(SRC, to)}`);
        continue;
      }
      for (const { name } of names) {
        if (to === index) {
          const known = faces.get(folder).get(name);
          if (known) use(folder, name, known[0], known[1], where);
          else problems.push(`${where}: ${folder}/index.ts has no ${name}; import it from its file once`);
        } else use(folder, name, to, name, where);
      }
      if (inSrc && to !== index) (rewrites.get(file) ?? rewrites.set(file, []).get(file)).push(site);
    }
  }
  if (problems.length)
    throw new Error(`rooms: cannot route these imports through an entry file:\n  ${problems.join("\n  ")}`);

  // each face: the names others use, from the files that define them; a type stays a type
  const program = ts.createProgram(files, {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    noEmit: true,
    allowJs: false,
  });
  const checker = program.getTypeChecker();
  const isValue = (file, name) => {
    const sf = program.getSourceFile(file);
    const mod = sf && checker.getSymbolAtLocation(sf);
    const sym = mod && checker.getExportsOfModule(mod).find((s) => s.name === name);
    if (!sym) throw new Error(`rooms: ${path.relative(ROOT, file)} exports no ${name}`);
    const decl = sym.declarations?.[0];
    if (
      decl &&
      (ts.isExportSpecifier(decl) || ts.isImportSpecifier(decl)) &&
      (decl.isTypeOnly || decl.parent?.parent?.isTypeOnly)
    )
      return false;
    const real = sym.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym) : sym;
    return (real.flags & ts.SymbolFlags.Value) !== 0;
  };
  for (const folder of folders) {
    const file = indexOf(folder);
    const names = uses.get(folder);
    if (names.size === 0) {
      if (isGeneratedIndex(file)) {
        console.log(`rooms: ${path.relative(ROOT, file)} is used by no other folder; removed`);
        changed.add(file);
        before.set(file, readFileSync(file, "utf8"));
        if (!DRY) rmSync(file);
      }
      continue;
    }
    const byFile = new Map();
    for (const [name, { file: f, orig }] of names) {
      const e = byFile.get(f) ?? byFile.set(f, { values: [], types: [] }).get(f);
      const shown = orig === name ? name : `${orig} as ${name}`;
      (isValue(f, orig) ? e.values : e.types).push(shown);
    }
    const lines = [
      `// The face of ${folder}/: what other folders may use of it, re-exported from the files that define it.`,
      `// ${INDEX_MARK} from what other folders import (node scripts/rooms-codemod.mjs);`,
      "// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).",
    ];
    const sortKey = (s) => s.toLowerCase();
    for (const f of [...byFile.keys()].sort()) {
      const { values, types } = byFile.get(f);
      const spec = specFor(file, f);
      if (values.length)
        lines.push(
          `export { ${values.sort((a, b) => sortKey(a).localeCompare(sortKey(b))).join(", ")} } from "${spec}";`,
        );
      if (types.length)
        lines.push(
          `export type { ${types.sort((a, b) => sortKey(a).localeCompare(sortKey(b))).join(", ")} } from "${spec}";`,
        );
    }
    write(file, `${lines.join("\n")}\n`);
  }

  // the importers: through the index, one import line per index
  for (const file of direct.keys()) if (!rewrites.has(file)) rewrites.set(file, []);
  for (const [file, list] of rewrites) {
    const text = readFileSync(file, "utf8");
    const edits = (direct.get(file) ?? []).concat(
      list
        .filter((site) => !(direct.get(file) ?? []).some((e) => e.start === site.lit.getStart()))
        .map((site) =>
          literalEdit(site.lit, specFor(file, indexOf(folderOf(target(file, site.lit.text))), site.lit.text)),
        ),
    );
    write(file, mergeImports(file, applyEdits(text, edits)));
  }
  // a file rewritten on an earlier run may still hold two lines for one index
  for (const file of files)
    if (!rewrites.has(file) && existsSync(file)) write(file, mergeImports(file, readFileSync(file, "utf8")));
}

/** Named imports of one index.ts in one file become one declaration. */
function mergeImports(file, text) {
  const sf = parse(file, text);
  const groups = new Map();
  for (const d of sf.statements) {
    if (!ts.isImportDeclaration(d) || !d.moduleSpecifier.text.endsWith("/index.js")) continue;
    const els = elementsOf(d);
    if (!els) continue;
    (groups.get(d.moduleSpecifier.text) ?? groups.set(d.moduleSpecifier.text, []).get(d.moduleSpecifier.text)).push({
      d,
      els,
    });
  }
  const edits = [];
  for (const [spec, list] of groups) {
    if (list.length < 2) continue;
    const seen = new Map();
    for (const { els } of list)
      for (const e of els) {
        const k = `${e.name} as ${e.local}`;
        const had = seen.get(k);
        seen.set(k, had ? { ...e, type: had.type && e.type } : e);
      }
    edits.push({
      start: list[0].d.getStart(),
      end: list[0].d.end,
      text: renderDecl("import", [...seen.values()], spec),
    });
    for (const { d } of list.slice(1)) edits.push({ start: d.getFullStart(), end: d.end, text: "" });
  }
  return edits.length ? applyEdits(text, edits) : text;
}

// ---------------------------------------------------------------------------------------------

applyMoves();
if (!DRY) for (const split of SPLITS) applySplit(split);
if (!DRY) applyEntries();
if (!DRY) applyMentions();
const list = [...changed].filter((f) => existsSync(f) && /\.(ts|mjs|js)$/.test(f)).map((f) => path.relative(ROOT, f));
if (list.length && !DRY) {
  execFileSync(path.join(ROOT, "node_modules/.bin/biome"), ["format", "--write", ...list], { stdio: "ignore" });
}
// a line merged and then formatted back as it was is no change
const really = [...before].filter(([f, was]) => (existsSync(f) ? readFileSync(f, "utf8") : null) !== was);
console.log(really.length ? `rooms: ${really.length} files changed` : "rooms: nothing to change");
