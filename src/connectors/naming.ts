// Where a fax goes in a document folder (WebDAV, SMB): the path pattern's fields ({date} {time}
// {sender} {csid} {dialled} {pages} {id} {messageId} {matter}), each cleaned to a safe name part, and
// the sidecar JSON written beside it. `{matter}` is the rule's fixed matter or the one match of its
// pattern in the fax's text; when the pattern names {matter} and there is none, or more than one,
// the fax goes to the `unsorted` path (the office's shared inbox) instead of a guess.
import type { ReceivedFax } from "../received/index.js";

/** Characters a name part may keep: anything else (slashes, spaces, quotes) becomes "_". */
export function namePart(s: string | null | undefined, empty = "unknown"): string {
  const t = (s ?? "")
    .replace(/[^A-Za-z0-9+._-]+/g, "_")
    .replace(/^[._]+/, "")
    .slice(0, 60);
  return t || empty;
}

export type MatterRule = string | { pattern: string };

/** The matter of a fax, or why there is none ("missing", "ambiguous"). */
export function matterOf(
  rule: MatterRule | undefined,
  fax: Pick<ReceivedFax, "text">,
): { matter: string } | { none: "missing" | "ambiguous" } {
  if (rule === undefined) return { none: "missing" };
  if (typeof rule === "string") return { matter: rule };
  const text = (fax.text ?? "").slice(0, 200_000);
  const found = new Set<string>();
  for (const m of text.matchAll(new RegExp(rule.pattern, "g"))) {
    const v = (m[1] ?? m[0]).trim();
    if (v) found.add(v);
    if (found.size > 1) return { none: "ambiguous" };
  }
  const [only] = found;
  return only === undefined ? { none: "missing" } : { matter: only };
}

export interface FolderPath {
  /** folders from the root, each a clean name part */
  folders: string[];
  /** the PDF's name */
  name: string;
  /** the sidecar's name (the PDF's with .json) */
  sidecar: string;
  matter: string | null;
  /** the fax went to `unsorted` (why), or null */
  unsorted: "missing" | "ambiguous" | null;
}

function render(pattern: string, fax: ReceivedFax, matter: string | null): string[] {
  const t = new Date(fax.receivedAt);
  const iso = Number.isNaN(t.getTime()) ? "" : t.toISOString();
  const values: Record<string, string> = {
    date: namePart(iso.slice(0, 10)),
    time: namePart(iso.slice(11, 19).replace(/:/g, "")),
    sender: namePart(fax.sender),
    csid: namePart(fax.csid),
    dialled: namePart(fax.dialled),
    pages: fax.pages != null ? String(fax.pages) : "0",
    id: namePart(fax.id),
    messageId: namePart(fax.messageId),
    matter: namePart(matter),
  };
  // each segment is filled and cleaned on its own: a field's value never makes a folder
  return pattern
    .split("/")
    .filter((s) => s !== "")
    .map((seg) =>
      namePart(
        seg.replace(/\{(\w+)\}/g, (m, k: string) => values[k] ?? namePart(m)),
        `fax-${values.id}`,
      ),
    );
}

/** The path a fax is written under, by `path` or (no matter where one is needed) `unsorted`. */
export function folderPath(
  spec: { path: string; unsorted: string; matter?: MatterRule | undefined },
  fax: ReceivedFax,
): FolderPath {
  let matter: string | null = null;
  let unsorted: FolderPath["unsorted"] = null;
  let pattern = spec.path;
  const m = matterOf(spec.matter, fax);
  if ("matter" in m) matter = m.matter;
  if (spec.path.includes("{matter}") && "none" in m) {
    unsorted = m.none;
    pattern = spec.unsorted;
  }
  const segs = render(pattern, fax, matter);
  let name = segs.pop() ?? `fax-${namePart(fax.id)}.pdf`;
  if (!/\.pdf$/i.test(name)) name = `${name}.pdf`;
  return { folders: segs, name, sidecar: name.replace(/\.pdf$/i, ".json"), matter, unsorted };
}

/** The `n`th candidate of a name (n = 1: as given; then "-2", "-3"...): nothing is overwritten. */
export function candidate(name: string, n: number): string {
  if (n === 1) return name;
  const dot = name.lastIndexOf(".");
  return dot > 0 ? `${name.slice(0, dot)}-${n}${name.slice(dot)}` : `${name}-${n}`;
}

/** The sidecar: the fax's record as kept (never its content), and which delivery wrote it. */
export function sidecarJson(fax: ReceivedFax, p: FolderPath, rule: string, deliveryId: string): string {
  return `${JSON.stringify(
    {
      faxgate: { delivery: deliveryId, rule },
      id: fax.id,
      messageId: fax.messageId,
      receivedAt: fax.receivedAt,
      sender: fax.sender,
      csid: fax.csid,
      dialled: fax.dialled,
      pages: fax.pages,
      status: fax.status,
      user: fax.user,
      matter: p.matter,
      unsorted: p.unsorted,
      file: p.name,
    },
    null,
    2,
  )}\n`;
}

/** True when a sidecar read back is this fax's (a try after a crash finds its own file). */
export function isOwnSidecar(text: string | null, fax: Pick<ReceivedFax, "messageId">): boolean {
  if (!text) return false;
  try {
    return (JSON.parse(text) as { messageId?: unknown }).messageId === fax.messageId;
  } catch {
    return false;
  }
}
