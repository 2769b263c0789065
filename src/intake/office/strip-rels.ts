// OOXML relationship parts (`_rels/*.rels`), read with an XML parser and written anew from what
// was judged: the reader then sees only relationships with a target inside the package, whatever
// spelling (entities, prefixes, quotes, duplicate attributes, unknown elements) the sender used.
// Every external target goes, hyperlinks too: a relationship's type is only a label, and a reader
// follows it by its id (a picture's r:link to a "hyperlink" relationship is loaded like a picture);
// a fax has nothing to click.
import { XMLParser } from "fast-xml-parser";

const PACKAGE_RELS = "http://schemas.openxmlformats.org/package/2006/relationships";

/** Thrown for a relationship part that cannot be read (the caller refuses the document). */
export class RelsError extends Error {}

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: "",
  removeNSPrefix: true,
  processEntities: true,
  htmlEntities: true,
  parseAttributeValue: false,
  parseTagValue: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  isArray: (name) => name === "Relationship",
});

const xmlAttr = (s: string): string =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** Whether a part name is a relationship part (`_rels/x.rels` at any depth). */
export function isRelsPart(name: string): boolean {
  return /(^|\/)_rels\/[^/]*\.rels$/i.test(name);
}

/**
 * Whether an internal target stays inside the package once resolved against the folder of the
 * part it belongs to (`word/_rels/document.xml.rels` -> `word/`): `../media/x.png` from a slide
 * is inside; a scheme, a backslash, `//host` or a climb above the root is not.
 */
export function insidePackage(target: string, relsName: string): boolean {
  let t = target.trim();
  for (let i = 0; i < 5; i++) {
    let d: string;
    try {
      d = decodeURIComponent(t);
    } catch {
      return false;
    }
    if (d === t) break;
    t = d;
  }
  if (t === "" || /[\\\u0000-\u001f]/.test(t) || /^[a-z][a-z0-9+.-]*:/i.test(t) || t.startsWith("//")) return false;
  const base = relsName.replace(/(^|\/)_rels\/[^/]*$/i, "$1");
  const segments: string[] = [];
  for (const s of (t.startsWith("/") ? t.slice(1) : base + t).split(/[?#]/)[0]!.split("/")) {
    if (s === "..") {
      if (segments.length === 0) return false;
      segments.pop();
    } else if (s !== "." && s !== "") segments.push(s);
  }
  return true;
}

interface ParsedRel {
  Id?: unknown;
  Type?: unknown;
  Target?: unknown;
  TargetMode?: unknown;
}

/** The relationship part rewritten: internal targets kept, external ones pointed at nothing. */
export function stripRels(xml: string, relsName: string, removed: string[]): string {
  let doc: Record<string, unknown>;
  try {
    doc = parser.parse(xml) as Record<string, unknown>;
  } catch {
    throw new RelsError("a relationship part could not be read");
  }
  const root = doc.Relationships;
  const rels: ParsedRel[] =
    root && typeof root === "object" ? ((root as { Relationship?: ParsedRel[] }).Relationship ?? []) : [];
  const out: string[] = [];
  for (const r of rels) {
    if (!r || typeof r !== "object") continue;
    const id = typeof r.Id === "string" ? r.Id : "";
    const type = typeof r.Type === "string" ? r.Type : "";
    const target = typeof r.Target === "string" ? r.Target : "";
    const mode = typeof r.TargetMode === "string" ? r.TargetMode.trim() : "";
    let kept = target;
    if ((mode !== "" && mode !== "Internal") || !insidePackage(target, relsName)) {
      removed.push(`an external relationship (${type.split("/").pop() || "of no type"})`);
      // the id stays, so that what refers to it still finds a relationship: one to nothing
      kept = "NULL";
    }
    out.push(`<Relationship Id="${xmlAttr(id)}" Type="${xmlAttr(type)}" Target="${xmlAttr(kept)}"/>`);
  }
  return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="${PACKAGE_RELS}">${out.join("")}</Relationships>`;
}
