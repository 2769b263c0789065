// RTF read as its readers read it, token by token, to find what names a file or URL: field
// instructions (`\fldinst`), shape property values (`\sv`), attached templates and mail-merge
// sources. A destination is set by its control word wherever it stands in a group (not only right
// after the brace) and holds for the groups inside it; a field's instruction may be split over
// several groups and hold nested fields; its text may be spelt with `\'hh`, `\uN` (with or without
// the fallback characters `\ucN` says to skip) or broken by control words. Each instruction is
// judged in every spelling a reader could make of it, and on all it contains.
import { fetchingField, isExternal } from "./strip-judge.js";

/** Thrown for an RTF that cannot be read safely (the caller refuses the document). */
export class RtfError extends Error {}

type Owner = "fldinst" | "sv" | "template" | "datafield";

interface Group {
  start: number;
  parent: Group | null;
  uc: number;
  /** The destination this group's own control word set, if any. */
  owner: Owner | null;
  /** The nearest group (this or an ancestor) that set a destination: where text goes. */
  ownerRef: Group | null;
  /** The nearest group (this or an ancestor) with `\field`. */
  fieldRef: Group | null;
  /** Two spellings: fallback characters skipped and control words dropped; or kept and spaced. */
  a: string;
  b: string;
  /** Instruction text of all `\fldinst` groups of this field (when it is a `\field` group). */
  fa: string;
  fb: string;
}

interface Owned {
  group: Group;
  end: number;
}

/** Text kept per instruction; longer is judged as fetching (no real field instruction is this long). */
const MAX_TEXT = 64 * 1024;
/** Deeper nesting is refused: no editor writes it, and it would only make the judging slow. */
const MAX_DEPTH = 2000;

/** Control words that read as a space in a field instruction (the `b` spelling). */
const SPACING = new Set(["tab", "par", "line", "cell", "row", "sect", "page", "column", "emspace", "enspace"]);

function append(g: Group, a: string, b: string): void {
  if (g.a.length < MAX_TEXT + 1) g.a += a;
  if (g.b.length < MAX_TEXT + 1) g.b += b;
}

export function stripRtf(rtf: string, removed: string[]): string {
  const owned: Owned[] = [];
  const edits: Array<{ start: number; end: number; text: string; why: string }> = [];
  const root: Group = {
    start: -1,
    parent: null,
    uc: 1,
    owner: null,
    ownerRef: null,
    fieldRef: null,
    a: "",
    b: "",
    fa: "",
    fb: "",
  };
  let g = root;
  let depth = 0;
  /** Characters still to skip after a `\uN` (as the reader that honours `\ucN` does). */
  let skip = 0;

  const text = (a: string, b: string): void => {
    // the `a` spelling drops what \ucN says to skip; `b` keeps it
    const inA = skip > 0 ? "" : a;
    if (skip > 0) skip--;
    const o = g.ownerRef;
    if (!o) return;
    append(o, inA, b);
    if (o.owner === "fldinst" && g.fieldRef && o !== root) {
      const f = g.fieldRef;
      if (f.fa.length < MAX_TEXT + 1) f.fa += inA;
      if (f.fb.length < MAX_TEXT + 1) f.fb += b;
    }
  };

  const n = rtf.length;
  let i = 0;
  while (i < n) {
    const c = rtf[i]!;
    if (c === "{") {
      if (++depth > MAX_DEPTH) throw new RtfError("it nests groups too deeply");
      g = {
        start: i,
        parent: g,
        uc: g.uc,
        owner: null,
        ownerRef: g.ownerRef,
        fieldRef: g.fieldRef,
        a: "",
        b: "",
        fa: "",
        fb: "",
      };
      skip = 0;
      i++;
    } else if (c === "}") {
      skip = 0;
      const closed = g;
      if (closed.parent) {
        if (closed.owner) {
          owned.push({ group: closed, end: i + 1 });
          // what a destination held is also part of the one around it (a field nested in a field)
          const outer = closed.parent.ownerRef;
          if (outer) append(outer, closed.a, closed.b);
        }
        g = closed.parent;
        depth--;
      }
      i++;
    } else if (c === "\\") {
      const next = rtf[i + 1];
      if (next === undefined) break;
      if (/[A-Za-z]/.test(next)) {
        const m = /^([A-Za-z]{1,32})(-?\d{1,10})? ?/.exec(rtf.slice(i + 1, i + 48))!;
        const raw = m[1]!;
        // destinations in any case: a reader that ignores case finds them too. \bin, \u and \uc
        // only as written: taking \BIN for \bin would skip bytes a case-strict reader parses
        const word = raw.toLowerCase();
        const param = m[2];
        const start = i;
        i += 1 + m[0].length;
        if (raw === "bin" && param !== undefined) {
          // raw bytes: never text, never braces
          i += Math.max(0, Number(param));
          continue;
        }
        if (raw === "u" && param !== undefined) {
          const code = (Number(param) + 65536) % 65536;
          const ch = String.fromCharCode(code);
          text(ch, ch);
          skip = g.uc;
          continue;
        }
        if (raw === "uc" && param !== undefined) {
          g.uc = Math.max(0, Number(param));
          continue;
        }
        if (word === "field") g.fieldRef = g;
        else if (word === "fldinst" || word === "sv" || word === "template" || word === "datafield") {
          g.owner = word;
          g.ownerRef = g;
        } else if (word === "objautlink" || word === "objlink") {
          // a linked object becomes an embedded one: its saved result is shown, its file not read
          edits.push({ start, end: i, text: "\\objemb ", why: "an OLE link" });
        } else if (word === "objupdate") {
          edits.push({ start, end: i, text: "", why: "an OLE link update" });
        }
        text("", SPACING.has(word) ? " " : "");
        continue;
      }
      // control symbols: \'hh is a character, \\ \{ \} literal ones, the rest formatting
      if (next === "'") {
        const hex = /^[0-9a-fA-F]{2}/.exec(rtf.slice(i + 2, i + 4));
        const ch = hex ? String.fromCharCode(parseInt(hex[0], 16)) : "";
        text(ch, ch);
        i += 2 + (hex ? 2 : 0);
      } else if (next === "\\" || next === "{" || next === "}") {
        text(next, next);
        i += 2;
      } else {
        text("", next === "\n" || next === "\r" || next === "~" ? " " : "");
        i += 2;
      }
    } else if (c === "\r" || c === "\n") {
      i++;
    } else {
      text(c, c);
      i++;
    }
  }
  // groups left open at the end are judged as if closed there
  for (let o = g; o.parent; o = o.parent) if (o.owner) owned.push({ group: o, end: n });

  for (const { group, end } of owned) {
    const why = judge(group);
    if (!why) continue;
    // a destination of the document's own group would take the whole document with it
    if (group.parent === root) throw new RtfError("it has a field instruction outside any field");
    edits.push({
      start: group.start,
      end,
      text: group.owner === "fldinst" ? "{\\*\\fldinst }" : group.owner === "sv" ? "{\\sv }" : "",
      why,
    });
  }
  return applyEdits(rtf, edits, removed);
}

function judge(g: Group): string | null {
  if (g.owner === "fldinst") {
    const f = g.fieldRef;
    const code =
      g.a.length > MAX_TEXT || g.b.length > MAX_TEXT
        ? "overlong"
        : (fetchingField(g.a) ?? fetchingField(g.b) ?? (f ? (fetchingField(f.fa) ?? fetchingField(f.fb)) : null));
    return code ? `a ${code} field` : null;
  }
  // a shape property naming a file or URL (pibName, fillBlipName of a linked picture)
  if (g.owner === "sv") return isExternal(g.a.trim()) || isExternal(g.b.trim()) ? "an external picture name" : null;
  // an attached template, a mail-merge data source: both name a file
  return `an RTF ${g.owner}`;
}

/** Applies the edits outermost first: an edit inside a group already replaced is dropped. */
function applyEdits(
  rtf: string,
  edits: Array<{ start: number; end: number; text: string; why: string }>,
  removed: string[],
): string {
  edits.sort((x, y) => x.start - y.start || y.end - x.end);
  let out = "";
  let at = 0;
  for (const e of edits) {
    if (e.start < at) continue;
    removed.push(e.why);
    out += rtf.slice(at, e.start) + e.text;
    at = e.end;
  }
  return out + rtf.slice(at);
}
