// The text of sent faxes (issue 51, ocr.sent): one row per sent job whose documents the OCR duty
// reads, with the same duty columns as received_text (state, lease, tries, the text) and the
// same word indexes: an FTS5 table kept by triggers on SQLite, a stored tsvector with its GIN
// index on PostgreSQL. The row goes with its job (ON DELETE CASCADE): retention's delete of a
// job takes its text, and a legal hold that keeps the job keeps its text. Part of a shipped step
// once released: never edit it then; a change is a new step per backend.
import type { DialectName } from "./db.js";
import { PG_WORDS } from "./received-text-tables.js";

/** The step's DDL for `d`: the table and its index (also rendered by sql/schema.ts). */
export function sentTextTables(d: DialectName): string {
  return `
  CREATE TABLE sent_text (
    seq ${d === "sqlite" ? "INTEGER PRIMARY KEY AUTOINCREMENT" : "BIGSERIAL PRIMARY KEY"},
    job_id TEXT NOT NULL UNIQUE REFERENCES jobs(id) ON DELETE CASCADE,
    user_name TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending','running','done','unreadable','failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    locked_until TEXT,
    last_error TEXT,
    body TEXT,
    created_at TEXT NOT NULL,
    done_at TEXT
  );
  CREATE INDEX sent_text_due ON sent_text(state, next_attempt_at);
  CREATE INDEX sent_text_user ON sent_text(user_name, created_at);
  ${sentTextWords(d)}`;
}

/** The word index alone: FTS5 over the text on SQLite, a stored tsvector and its GIN index on PostgreSQL. */
export function sentTextWords(d: DialectName): string {
  if (d === "postgres")
    return `
  ALTER TABLE sent_text ADD COLUMN words tsvector GENERATED ALWAYS AS (${PG_WORDS("body")}) STORED;
  CREATE INDEX sent_text_words ON sent_text USING GIN (words);
  `;
  return `
  CREATE VIRTUAL TABLE sent_text_fts USING fts5(body, content='sent_text', content_rowid='seq', tokenize='unicode61 remove_diacritics 0');
  CREATE TRIGGER sent_text_fts_add AFTER INSERT ON sent_text BEGIN
    INSERT INTO sent_text_fts(rowid, body) VALUES (new.seq, new.body);
  END;
  CREATE TRIGGER sent_text_fts_gone AFTER DELETE ON sent_text BEGIN
    INSERT INTO sent_text_fts(sent_text_fts, rowid, body) VALUES ('delete', old.seq, old.body);
  END;
  CREATE TRIGGER sent_text_fts_change AFTER UPDATE OF body ON sent_text BEGIN
    INSERT INTO sent_text_fts(sent_text_fts, rowid, body) VALUES ('delete', old.seq, old.body);
    INSERT INTO sent_text_fts(rowid, body) VALUES (new.seq, new.body);
  END;
  `;
}
