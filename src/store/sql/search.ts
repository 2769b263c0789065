// Search over received faxes (issue 51, GET /api/search): their OCR text by its word index, and
// the sender's number, the number dialled, the CSID and the inbox note by the words typed; only
// among the faxes the asker may see, within a date range and states. One operation, its two
// dialects side by side: FTS5's bm25 on SQLite, ts_rank over the same words on PostgreSQL. The
// ranks differ in value, never in what matches or (for a clear case) in order: text matches
// first, the better ranked first, then the newest.
import type { ReceivedFax, ReceivedState } from "../../received/index.js";
import { type Db, type DialectName, marks, perDialect } from "./db.js";
import { COLUMNS, groupPattern, type ReceivedRow, toReceived } from "./received.js";
import { PG_WORDS } from "./received-text-tables.js";

export interface ReceivedSearch {
  /** Typed words (letters and digits; read with searchWords). All must be in the text, or the text of a field. */
  words: string[];
  /** Received at or after / before these ISO times. */
  from?: string;
  until?: string;
  states?: ReceivedState[];
  /** Whose faxes: everything (operators), or a person's own and their groups' inboxes. */
  visibleTo: "all" | { user: string; groups: string[] };
  limit: number;
}

export interface SearchHit {
  fax: ReceivedFax;
  /** Higher is better; comparable within one answer only. 0: found by a field, not by its text. */
  score: number;
  /** The line of the text with the most of the words, trimmed; null when found by a field. */
  line: string | null;
  /** Which of text, sender, dialled, csid, note matched. */
  matched: string[];
}

/** The words of a query as both word indexes cut them: runs of letters and digits, lower case. */
export function searchWords(q: string): string[] {
  return [
    ...new Set(
      (
        q
          .normalize("NFC")
          .toLowerCase()
          .match(/[\p{L}\p{N}]+/gu) ?? []
      ).slice(0, 12),
    ),
  ];
}

/** A fax's OCR text holds all the words; `q.words` is the words joined by spaces (a CTE, below). */
const TEXT_HIT: Record<DialectName, string> = {
  sqlite: "f.seq IS NOT NULL",
  postgres: `(t.body IS NOT NULL AND ${PG_WORDS("t.body")} @@ plainto_tsquery('simple', (SELECT words FROM q)))`,
};

/**
 * Higher is better: FTS5's rank is bm25 negated, PostgreSQL's ts_rank is higher for better. Only
 * for text hits; the others score 0 on both (a NULL would sort first on one and last on the other).
 */
const SCORE: Record<DialectName, string> = {
  sqlite: "-f.rank",
  postgres: `ts_rank(${PG_WORDS("t.body")}, plainto_tsquery('simple', (SELECT words FROM q)))`,
};

// SQLite's word index answers in a subquery joined by rowid (bare lower-case words: all must be
// there); PostgreSQL's is the GIN index under TEXT_HIT
const TEXT_JOIN: Record<DialectName, string> = {
  sqlite:
    "LEFT JOIN (SELECT rowid AS seq, rank FROM received_text_fts WHERE received_text_fts MATCH (SELECT words FROM q)) f ON f.seq = t.seq",
  postgres: "",
};

interface HitRow extends ReceivedRow {
  body: string | null;
  score: number | string | null;
  text_hit: number | boolean;
}

/** Fields the words are looked for in as plain text, beside the OCR text. */
const FIELDS = ["sender", "dialled", "csid", "note"] as const;

export async function searchReceived(db: Db, s: ReceivedSearch): Promise<SearchHit[]> {
  const where: Array<(d: DialectName) => string> = [];
  const args: unknown[] = [];
  const words = s.words;
  const withText = words.length > 0;
  if (withText) {
    const fields = FIELDS.map((c) => `(${words.map(() => `LOWER(COALESCE(r.${c}, '')) LIKE ?`).join(" AND ")})`);
    where.push((d) => `(${TEXT_HIT[d]} OR ${fields.join(" OR ")})`);
    args.push(...FIELDS.flatMap(() => words.map((w) => `%${w}%`)));
  }
  if (s.visibleTo !== "all") {
    const mine = ["r.user_name = ?", ...s.visibleTo.groups.map(() => "r.groups LIKE ?")];
    where.push(() => `(${mine.join(" OR ")})`);
    args.push(s.visibleTo.user, ...s.visibleTo.groups.map(groupPattern));
  }
  if (s.from) {
    where.push(() => "r.received_at >= ?");
    args.push(s.from);
  }
  if (s.until) {
    where.push(() => "r.received_at < ?");
    args.push(s.until);
  }
  if (s.states?.length) {
    where.push(() => `r.state IN (${marks(s.states!.length)})`);
    args.push(...s.states);
  }
  const cols = COLUMNS.split(", ")
    .map((c) => `r.${c}`)
    .join(", ");
  const sql = perDialect(
    (d) => `WITH q AS (SELECT CAST(? AS TEXT) AS words)
    SELECT ${cols}, t.body AS body, ${withText ? `CASE WHEN ${TEXT_HIT[d]} THEN ${SCORE[d]} ELSE 0 END` : "0"} AS score, ${withText ? `CASE WHEN ${TEXT_HIT[d]} THEN 1 ELSE 0 END` : "0"} AS text_hit
    FROM received_faxes r
    LEFT JOIN received_text t ON t.fax_id = r.id
    ${withText ? TEXT_JOIN[d] : ""}
    ${where.length ? `WHERE ${where.map((w) => w(d)).join(" AND ")}` : ""}
    ORDER BY text_hit DESC, score DESC, r.received_at DESC, r.id DESC LIMIT ?`,
  );
  const rows = await db.all<HitRow>(sql, [words.join(" "), ...args, s.limit]);
  return rows.map((r) => {
    const textHit = Number(r.text_hit) === 1;
    const matched = [
      ...(textHit ? ["text"] : []),
      ...FIELDS.filter((c) => withText && words.every((w) => (r[c] ?? "").toLowerCase().includes(w))),
    ];
    return {
      fax: toReceived(r),
      score: textHit ? Number(r.score ?? 0) : 0,
      line: textHit && r.body ? bestLine(r.body, words) : null,
      matched,
    };
  });
}

/** The line with the most of the words (the first such), at most 160 characters around them. */
export function bestLine(body: string, words: readonly string[]): string | null {
  let best: string | null = null;
  let most = 0;
  for (const raw of body.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line) continue;
    const have = new Set(line.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
    const n = words.filter((w) => have.has(w)).length;
    if (n > most) {
      most = n;
      best = line;
    }
  }
  return best && best.length > 160 ? `${best.slice(0, 157)}...` : best;
}
