// The text of received faxes (issue 51): one row per fax whose text is read by OCR, with the duty's
// state (pending -> running -> done | unreadable | failed), its lease and tries, the text itself,
// and how long content rules may hold the fax's routing. The words are indexed where each backend
// indexes words best: an FTS5 table kept by triggers on SQLite, a GIN index over the text's
// tsvector on PostgreSQL ('simple': no stemming, the same words FTS5's unicode61 finds). Part of
// a shipped step once released: never edit it then; a change is a new step per backend.
import type { DialectName } from "./db.js";

/**
 * PostgreSQL's words of a text: runs of letters and digits, as FTS5's unicode61 cuts them (the
 * default parser would read "2026-114" as 2026 and -114, and "a/b" as a file path).
 */
export const PG_WORDS = (column: string): string =>
  `to_tsvector('simple', regexp_replace(coalesce(${column}, ''), '[^[:alnum:]]+', ' ', 'g'))`;

/** The step's DDL for `d`; the table's columns are the same on both, the word index differs. */
export function receivedTextTables(d: DialectName): string {
  const table = `
  CREATE TABLE received_text (
    seq ${d === "sqlite" ? "INTEGER PRIMARY KEY AUTOINCREMENT" : "BIGSERIAL PRIMARY KEY"},
    fax_id TEXT NOT NULL UNIQUE REFERENCES received_faxes(id) ON DELETE CASCADE,
    user_name TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending','running','done','unreadable','failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    locked_until TEXT,
    last_error TEXT,
    body TEXT,
    waits_until TEXT,
    created_at TEXT NOT NULL,
    done_at TEXT
  );
  CREATE INDEX received_text_due ON received_text(state, next_attempt_at);
  CREATE INDEX received_text_waiting ON received_text(waits_until) WHERE waits_until IS NOT NULL;
  `;
  return `${table}${receivedTextWords(d)}`;
}

/** The word index alone (also rendered by sql/schema.ts's one definition). */
export function receivedTextWords(d: DialectName): string {
  if (d === "postgres")
    return `
  CREATE INDEX received_text_words ON received_text USING GIN (${PG_WORDS("body")});
  `;
  // external content: the words only, the text stays in received_text (kept in step by triggers)
  return `
  CREATE VIRTUAL TABLE received_text_fts USING fts5(body, content='received_text', content_rowid='seq', tokenize='unicode61 remove_diacritics 0');
  CREATE TRIGGER received_text_fts_add AFTER INSERT ON received_text BEGIN
    INSERT INTO received_text_fts(rowid, body) VALUES (new.seq, new.body);
  END;
  CREATE TRIGGER received_text_fts_gone AFTER DELETE ON received_text BEGIN
    INSERT INTO received_text_fts(received_text_fts, rowid, body) VALUES ('delete', old.seq, old.body);
  END;
  CREATE TRIGGER received_text_fts_change AFTER UPDATE OF body ON received_text BEGIN
    INSERT INTO received_text_fts(received_text_fts, rowid, body) VALUES ('delete', old.seq, old.body);
    INSERT INTO received_text_fts(rowid, body) VALUES (new.seq, new.body);
  END;
  `;
}

/**
 * PostgreSQL's words of each text stored beside it (issue 51), with their own GIN index: ranking
 * hits with ts_rank over the expression made PostgreSQL cut every hit's text into words again
 * (p50 249 ms under load, bench/ocr.bench.ts); the stored column is cut once, when the text is
 * written. Expand-only: the expression index stays until a later step drops it, so a gateway
 * still on the previous release keeps its fast lookups during a rolling upgrade. Adding the
 * column rewrites received_text once (an exclusive lock for the length of the rewrite).
 */
export function receivedTextStoredWords(): string {
  return `
  ALTER TABLE received_text ADD COLUMN words tsvector GENERATED ALWAYS AS (${PG_WORDS("body")}) STORED;
  CREATE INDEX received_text_stored_words ON received_text USING GIN (words);
  `;
}
