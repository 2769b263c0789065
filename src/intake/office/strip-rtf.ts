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

type Edit = { start: number; end: number; text: string; why: string };

function newGroup(start: number, parent: Group | null): Group {
  return {
    start,
    parent,
    uc: parent?.uc ?? 1,
    owner: null,
    ownerRef: parent?.ownerRef ?? null,
    fieldRef: parent?.fieldRef ?? null,
    a: "",
    b: "",
    fa: "",
    fb: "",
  };
}

export function stripRtf(rtf: string, removed: string[]): string {
  const reader = new RtfReader(rtf);
  reader.read();
  const edits = [...reader.edits];
  for (const { group, end } of reader.owned) {
    const why = judge(group);
    if (!why) continue;
    // a destination of the document's own group would take the whole document with it
    if (group.parent === reader.root) throw new RtfError("it has a field instruction outside any field");
    edits.push({
      start: group.start,
      end,
      text: group.owner === "fldinst" ? "{\\*\\fldinst }" : group.owner === "sv" ? "{\\sv }" : "",
      why,
    });
  }
  return applyEdits(rtf, edits, removed);
}

/**
 * One pass over the RTF as a reader makes it: groups opened and closed, control words that set a
 * destination or link a file, and the text each destination holds in both spellings.
 */
class RtfReader {
  readonly root: Group = newGroup(-1, null);
  /** Every group that set a destination, with where it ends: each is judged after the pass. */
  readonly owned: Owned[] = [];
  /** Edits the control words themselves call for (OLE links), made whatever the judging says. */
  readonly edits: Edit[] = [];
  private g = this.root;
  private depth = 0;
  /** Characters still to skip after a `\uN` (as the reader that honours `\ucN` does). */
  private skip = 0;
  private i = 0;

  constructor(private readonly rtf: string) {}

  read(): void {
    const { rtf } = this;
    while (this.i < rtf.length) {
      const c = rtf[this.i]!;
      if (c === "{") this.open();
      else if (c === "}") this.close();
      else if (c === "\\") {
        if (this.i + 1 >= rtf.length) break;
        this.control();
      } else {
        // line breaks in RTF source are not text
        if (c !== "\r" && c !== "\n") this.text(c, c);
        this.i++;
      }
    }
    // groups left open at the end are judged as if closed there
    for (let o = this.g; o.parent; o = o.parent) if (o.owner) this.owned.push({ group: o, end: rtf.length });
  }

  private open(): void {
    if (++this.depth > MAX_DEPTH) throw new RtfError("it nests groups too deeply");
    this.g = newGroup(this.i, this.g);
    this.skip = 0;
    this.i++;
  }

  private close(): void {
    this.skip = 0;
    const closed = this.g;
    if (closed.parent) {
      if (closed.owner) {
        this.owned.push({ group: closed, end: this.i + 1 });
        // what a destination held is also part of the one around it (a field nested in a field)
        const outer = closed.parent.ownerRef;
        if (outer) append(outer, closed.a, closed.b);
      }
      this.g = closed.parent;
      this.depth--;
    }
    this.i++;
  }

  /** A backslash: a control word (letters) or a control symbol (one other character). */
  private control(): void {
    const next = this.rtf[this.i + 1]!;
    if (/[A-Za-z]/.test(next)) {
      this.controlWord();
      return;
    }
    // control symbols: \'hh is a character, \\ \{ \} literal ones, the rest formatting
    if (next === "'") {
      const hex = /^[0-9a-fA-F]{2}/.exec(this.rtf.slice(this.i + 2, this.i + 4));
      const ch = hex ? String.fromCharCode(parseInt(hex[0], 16)) : "";
      this.text(ch, ch);
      this.i += 2 + (hex ? 2 : 0);
    } else if (next === "\\" || next === "{" || next === "}") {
      this.text(next, next);
      this.i += 2;
    } else {
      this.text("", next === "\n" || next === "\r" || next === "~" ? " " : "");
      this.i += 2;
    }
  }

  private controlWord(): void {
    const m = /^([A-Za-z]{1,32})(-?\d{1,10})? ?/.exec(this.rtf.slice(this.i + 1, this.i + 48))!;
    const raw = m[1]!;
    // destinations in any case: a reader that ignores case finds them too. \bin, \u and \uc
    // only as written: taking \BIN for \bin would skip bytes a case-strict reader parses
    const word = raw.toLowerCase();
    const param = m[2];
    const start = this.i;
    this.i += 1 + m[0].length;
    if (param !== undefined && this.parameterWord(raw, Number(param))) return;
    const g = this.g;
    if (word === "field") g.fieldRef = g;
    else if (word === "fldinst" || word === "sv" || word === "template" || word === "datafield") {
      g.owner = word;
      g.ownerRef = g;
    } else if (word === "objautlink" || word === "objlink") {
      // a linked object becomes an embedded one: its saved result is shown, its file not read
      this.edits.push({ start, end: this.i, text: "\\objemb ", why: "an OLE link" });
    } else if (word === "objupdate") {
      this.edits.push({ start, end: this.i, text: "", why: "an OLE link update" });
    }
    this.text("", SPACING.has(word) ? " " : "");
  }

  /** `\binN` (raw bytes: never text, never braces), `\uN` (a character), `\ucN`; true if it was one. */
  private parameterWord(raw: string, param: number): boolean {
    if (raw === "bin") {
      this.i += Math.max(0, param);
      return true;
    }
    if (raw === "u") {
      const ch = String.fromCharCode((param + 65536) % 65536);
      this.text(ch, ch);
      this.skip = this.g.uc;
      return true;
    }
    if (raw === "uc") {
      this.g.uc = Math.max(0, param);
      return true;
    }
    return false;
  }

  /** Text read in the current group: to its destination, and to its field's instruction. */
  private text(a: string, b: string): void {
    // the `a` spelling drops what \ucN says to skip; `b` keeps it
    const inA = this.skip > 0 ? "" : a;
    if (this.skip > 0) this.skip--;
    const g = this.g;
    const o = g.ownerRef;
    if (!o) return;
    append(o, inA, b);
    if (o.owner === "fldinst" && g.fieldRef && o !== this.root) {
      const f = g.fieldRef;
      if (f.fa.length < MAX_TEXT + 1) f.fa += inA;
      if (f.fb.length < MAX_TEXT + 1) f.fb += b;
    }
  }
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
function applyEdits(rtf: string, edits: Edit[], removed: string[]): string {
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
