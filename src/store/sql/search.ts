// Search over received and sent faxes (issue 51, GET /api/search): their OCR text by its word index, and
// the sender's number, the number dialled, the CSID and the inbox note by the words typed; only
// among the faxes the asker may see, within a date range and states. One operation, its two
// dialects side by side: FTS5's bm25 on SQLite, ts_rank over the same words on PostgreSQL. The
// ranks differ in value, never in what matches or (for a clear case) in order: text matches
// first, the better ranked first, then the newest.
import type { ReceivedFax, ReceivedState } from "../../received/index.js";
import { type Db, type DialectName, marks, perDialect } from "./db.js";
import { COLUMNS, groupPattern, type ReceivedRow, toReceived } from "./received.js";

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

/**
 * The faxes whose OCR text holds all the words (`q.words`, the words joined by spaces), each with
 * its rank, higher better: FTS5's bm25 negated on SQLite, ts_rank over the stored, GIN-indexed
 * tsvector on PostgreSQL. Each backend's word index answers it alone, never a scan of every text.
 * PostgreSQL's is a join with q, pulled up into the plan: the planner sees the words and
 * estimates the matches from the index's statistics (a subquery for them hid them).
 */
const textHits = (table: "received_text" | "sent_text", key: "fax_id" | "job_id"): Record<DialectName, string> => ({
  sqlite: `SELECT t.${key} AS id, -f.rank AS score
    FROM ${table}_fts f JOIN ${table} t ON t.seq = f.rowid
    WHERE ${table}_fts MATCH (SELECT words FROM q)`,
  // the stored words (received-text-tables.ts receivedTextStoredWords, sent-text-tables.ts):
  // ranked without cutting each hit's text again
  postgres: `SELECT t.${key} AS id, ts_rank(t.words, plainto_tsquery('simple', q.words)) AS score
    FROM ${table} t, q
    WHERE t.words @@ plainto_tsquery('simple', q.words)`,
});
const TEXT_HITS = textHits("received_text", "fax_id");

/**
 * A fax found by a field is a text hit too when its text holds the words (it is then counted
 * once, as a text hit).
 */
const NOT_TEXT_HIT: Record<DialectName, string> = {
  sqlite: "r.id NOT IN (SELECT id FROM text_hits)",
  postgres: "NOT EXISTS (SELECT 1 FROM text_hits h2 WHERE h2.id = r.id)",
};

/**
 * PostgreSQL computes a CTE read twice whole, first: the planner would not see the words (it
 * planned for 500 matches where there were 70,000) and every match would be ranked before the
 * scope's join. Inlined, the words are seen and only the faxes the asker may see are ranked.
 */
const INLINE: Record<DialectName, string> = { sqlite: "", postgres: "NOT MATERIALIZED " };

/**
 * The query shape both kinds share: the text's hits and the fields' hits found apart, joined by
 * UNION ALL, scoped, ordered on their keys alone and cut to the page; only the page's rows are
 * then read whole with their text. Reading every hit's row and text before the cut cost
 * PostgreSQL two index probes per hit (docs/bench.md, "PostgreSQL search, the page first").
 * Its marks: the words, then those of `textHit`, `fieldHit`, and the page's size.
 */
function pageFirst(
  d: DialectName,
  o: {
    hits: Record<DialectName, string>;
    /** The owner's alias and its time column: r.received_at, j.finished_at. */
    alias: string;
    at: string;
    /** FROM and WHERE of a text hit (text_hits h joined to the owner) and of a field's hit. */
    textHit: string;
    fieldHit: string;
    /** SELECT and FROM of the page's rows read whole (page p joined to the owner). */
    read: string;
  },
): string {
  const { alias: a, at } = o;
  return `WITH q AS ${INLINE[d]}(SELECT CAST(? AS TEXT) AS words),
    text_hits AS ${INLINE[d]}(${o.hits[d]}),
    page AS (
      SELECT ${a}.id AS id, h.score AS score, 1 AS text_hit, ${a}.${at} AS ${at}
      ${o.textHit}
      UNION ALL
      SELECT ${a}.id AS id, 0 AS score, 0 AS text_hit, ${a}.${at} AS ${at}
      ${o.fieldHit}
      ORDER BY text_hit DESC, score DESC, ${at} DESC, id DESC LIMIT ?
    )
    ${o.read}
    ORDER BY p.text_hit DESC, p.score DESC, ${a}.${at} DESC, ${a}.id DESC`;
}

/** The date range of a search on the owner's time column, added to its scope. */
function inRange(s: ReceivedSearch, column: string, where: string[], args: unknown[]): void {
  if (s.from) {
    where.push(`${column} >= ?`);
    args.push(s.from);
  }
  if (s.until) {
    where.push(`${column} < ?`);
    args.push(s.until);
  }
}

interface HitRow extends ReceivedRow {
  body: string | null;
  score: number | string | null;
  text_hit: number | string | boolean;
}

/** Fields the words are looked for in as plain text, beside the OCR text. */
const FIELDS = ["sender", "dialled", "csid", "note"] as const;

/**
 * One query per store. The text's hits (from its word index) and the fields' hits are found
 * apart and joined by UNION ALL, then scoped, ordered and cut: an OR of the two in one WHERE made
 * each backend read every fax's text (PostgreSQL computed each tsvector again), 670 ms over 2,000
 * faxes (bench/ocr.bench.ts). Text matches first, the better ranked first, then the newest.
 */
export async function searchReceived(db: Db, s: ReceivedSearch): Promise<SearchHit[]> {
  const where: string[] = [];
  const args: unknown[] = [];
  const words = s.words;
  const withText = words.length > 0;
  if (s.visibleTo !== "all") {
    const mine = ["r.user_name = ?", ...s.visibleTo.groups.map(() => "r.groups LIKE ?")];
    where.push(`(${mine.join(" OR ")})`);
    args.push(s.visibleTo.user, ...s.visibleTo.groups.map(groupPattern));
  }
  inRange(s, "r.received_at", where, args);
  if (s.states?.length) {
    where.push(`r.state IN (${marks(s.states.length)})`);
    args.push(...s.states);
  }
  const cols = COLUMNS.split(", ")
    .map((c) => `r.${c}`)
    .join(", ");
  const scoped = where.length ? `WHERE ${where.join(" AND ")}` : "";
  const order = "ORDER BY text_hit DESC, score DESC, r.received_at DESC, r.id DESC LIMIT ?";
  let rows: HitRow[];
  if (withText) {
    const fields = FIELDS.map((c) => `(${words.map(() => `LOWER(COALESCE(r.${c}, '')) LIKE ?`).join(" AND ")})`);
    const fieldArgs = FIELDS.flatMap(() => words.map((w) => `%${w}%`));
    // a fax found by both counts as a text hit (pageFirst)
    const textScoped = where.length ? `AND ${where.join(" AND ")}` : "";
    const sql = perDialect((d) =>
      pageFirst(d, {
        hits: TEXT_HITS,
        alias: "r",
        at: "received_at",
        textHit: `FROM text_hits h JOIN received_faxes r ON r.id = h.id
      WHERE 1 = 1 ${textScoped}`,
        fieldHit: `FROM received_faxes r
      WHERE (${fields.join(" OR ")}) ${textScoped}
        AND ${NOT_TEXT_HIT[d]}`,
        read: `SELECT ${cols}, t.body AS body, p.score AS score, p.text_hit AS text_hit
    FROM page p JOIN received_faxes r ON r.id = p.id
    LEFT JOIN received_text t ON t.fax_id = r.id`,
      }),
    );
    rows = await db.all<HitRow>(sql, [words.join(" "), ...args, ...fieldArgs, ...args, s.limit]);
  } else {
    rows = await db.all<HitRow>(
      `SELECT ${cols}, t.body AS body, 0 AS score, 0 AS text_hit
    FROM received_faxes r LEFT JOIN received_text t ON t.fax_id = r.id
    ${scoped}
    ${order}`,
      [...args, s.limit],
    );
  }
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

/** A sent fax (a job whose text ocr.sent queued) as search shows it. */
export interface SentFax {
  id: string;
  user: string;
  /** The numbers dialled, in the job's order. */
  numbers: string[];
  /** When its last recipient ended (delivered, or failed beside one delivered). */
  sentAt: string;
  /** The most pages one recipient's fax had, null before the service said. */
  pages: number | null;
}

export interface SentSearchHit {
  job: SentFax;
  score: number;
  line: string | null;
  /** Which of text, dialled matched. */
  matched: string[];
}

export type FaxSearchHit = ({ kind: "received" } & SearchHit) | ({ kind: "sent" } & SentSearchHit);

/** The sent faxes whose text holds all the words, ranked as TEXT_HITS ranks received ones. */
const SENT_TEXT_HITS = textHits("sent_text", "job_id");

interface SentHitRow {
  id: string;
  user: string;
  finished_at: string;
  body: string | null;
  score: number | string | null;
  text_hit: number | string | boolean;
}

/**
 * The sent faxes (jobs with a row in sent_text: read, unreadable or waiting) the asker may see
 * (their own; everything for operators) whose text or a number dialled holds the words; by the
 * same rules as searchReceived. A received fax's states and groups do not apply: a search with
 * states finds received faxes only.
 */
export async function searchSent(db: Db, s: ReceivedSearch): Promise<SentSearchHit[]> {
  if (s.states?.length) return [];
  const where: string[] = [];
  const args: unknown[] = [];
  const words = s.words;
  if (s.visibleTo !== "all") {
    where.push('j."user" = ?');
    args.push(s.visibleTo.user);
  }
  inRange(s, "j.finished_at", where, args);
  const scoped = where.length ? `AND ${where.join(" AND ")}` : "";
  const order = "ORDER BY text_hit DESC, score DESC, j.finished_at DESC, j.id DESC LIMIT ?";
  let rows: SentHitRow[];
  if (words.length > 0) {
    const dialled = words.map(() => "LOWER(r.number) LIKE ?").join(" AND ");
    // as searchReceived: scoped, ordered on the keys and cut first; the page's text read after
    const sql = perDialect((d) =>
      pageFirst(d, {
        hits: SENT_TEXT_HITS,
        alias: "j",
        at: "finished_at",
        textHit: `FROM text_hits h JOIN jobs j ON j.id = h.id
      WHERE j.finished_at IS NOT NULL ${scoped}`,
        fieldHit: `FROM sent_text t JOIN jobs j ON j.id = t.job_id
      WHERE j.finished_at IS NOT NULL ${scoped}
        AND EXISTS (SELECT 1 FROM recipients r WHERE r.job_id = j.id AND ${dialled})
        AND NOT EXISTS (SELECT 1 FROM text_hits h2 WHERE h2.id = j.id)`,
        read: `SELECT j.id AS id, j."user" AS "user", j.finished_at AS finished_at, t.body AS body, p.score AS score, p.text_hit AS text_hit
    FROM page p JOIN jobs j ON j.id = p.id JOIN sent_text t ON t.job_id = j.id`,
      }),
    );
    rows = await db.all<SentHitRow>(sql, [words.join(" "), ...args, ...args, ...words.map((w) => `%${w}%`), s.limit]);
  } else {
    rows = await db.all<SentHitRow>(
      `SELECT j.id AS id, j."user" AS "user", j.finished_at AS finished_at, t.body AS body, 0 AS score, 0 AS text_hit
    FROM sent_text t JOIN jobs j ON j.id = t.job_id
    WHERE j.finished_at IS NOT NULL ${scoped}
    ${order}`,
      [...args, s.limit],
    );
  }
  if (rows.length === 0) return [];
  const recipients = await db.all<{ job_id: string; number: string; pages: number | string | null }>(
    `SELECT job_id, number, pages FROM recipients WHERE job_id IN (${marks(rows.length)}) ORDER BY job_id, idx`,
    rows.map((r) => r.id),
  );
  return rows.map((r) => {
    const mine = recipients.filter((x) => x.job_id === r.id);
    const numbers = mine.map((x) => x.number);
    const textHit = Number(r.text_hit) === 1;
    const counted = mine.map((x) => (x.pages === null ? null : Number(x.pages))).filter((n) => n !== null);
    return {
      job: {
        id: r.id,
        user: r.user,
        numbers,
        sentAt: r.finished_at,
        pages: counted.length ? Math.max(...counted) : null,
      },
      score: textHit ? Number(r.score ?? 0) : 0,
      line: textHit && r.body ? bestLine(r.body, words) : null,
      matched: [
        ...(textHit ? ["text"] : []),
        ...(words.length && numbers.some((n) => words.every((w) => n.toLowerCase().includes(w))) ? ["dialled"] : []),
      ],
    };
  });
}

/**
 * Received and sent faxes together. Each kind is asked for a page of `limit` in its own order;
 * the two are merged: text matches first, then the fields' matches, each the newest first. The
 * two kinds' ranks come from two word indexes and are not comparable (bm25 weighs a word by the
 * texts of its own table), so text matches take turns by their place in their own kind's order,
 * the newer first at the same place: the same answer on both backends.
 */
export async function searchFaxes(db: Db, s: ReceivedSearch): Promise<FaxSearchHit[]> {
  const [received, sent] = await Promise.all([searchReceived(db, s), searchSent(db, s)]);
  const keyed = [
    ...received.map((h, i) => ({ hit: { kind: "received" as const, ...h } as FaxSearchHit, place: i })),
    ...sent.map((h, i) => ({ hit: { kind: "sent" as const, ...h } as FaxSearchHit, place: i })),
  ].map(({ hit, place }) => {
    const text = hit.matched.includes("text");
    return {
      hit,
      text: text ? 1 : 0,
      // hits come text matches first: a text match's place counts the text matches before it
      place: text ? place : 0,
      at: hit.kind === "received" ? hit.fax.receivedAt : hit.job.sentAt,
      id: hit.kind === "received" ? hit.fax.id : hit.job.id,
    };
  });
  keyed.sort(
    (a, b) =>
      b.text - a.text || a.place - b.place || (b.at < a.at ? -1 : b.at > a.at ? 1 : 0) || (b.id < a.id ? -1 : 1),
  );
  return keyed.slice(0, s.limit).map((k) => k.hit);
}
