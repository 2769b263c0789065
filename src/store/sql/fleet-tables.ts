// The fleet's shared account budget (issue 55, sql/fleet-budget.ts): one row per fax account with
// the next free slot of all calls and of the non-dispatch ones, the pace after 429s and the history calls of the last minute, and
// one row per gateway alive on the store. One text for both backends (SQLite keeps the tables
// unused: one gateway there, its per-process gate is the budget). Part of a shipped step once
// merged: never edit it; a change is a new step per backend.
export function fleetTables(real: string): string {
  return `
  CREATE TABLE fleet_budget (
    account TEXT PRIMARY KEY,
    next_at ${real} NOT NULL DEFAULT 0,
    others_next_at ${real} NOT NULL DEFAULT 0,
    pace ${real} NOT NULL DEFAULT 1,
    paced_at ${real} NOT NULL DEFAULT 0,
    closed_until ${real} NOT NULL DEFAULT 0,
    history_calls TEXT NOT NULL DEFAULT '[]',
    history_closed_until ${real} NOT NULL DEFAULT 0
  );
  CREATE TABLE fleet_members (
    gateway TEXT PRIMARY KEY,
    account TEXT NOT NULL,
    seen_until ${real} NOT NULL,
    busy INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX fleet_members_account ON fleet_members(account, seen_until);
  `;
}
