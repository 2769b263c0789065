// What every route of the emulator shares: the store, paths, clock, variant and the fault switch.
import type { Clock } from "../clock.js";
import type { ApiVariant } from "./types.js";
import type { Logger } from "../log/index.js";
import type { AccountRow, Db, KeyRow, UserRow } from "./db.js";
import type { AccountRate, Behaviour, HistoryBudget } from "./behaviour.js";
import type { Faults } from "./faults.js";
import type { Webhooks } from "./webhooks.js";

export interface EmulatorContext {
  db: Db;
  dataDir: string;
  faxDir: string;
  uploadDir: string;
  variant: ApiVariant;
  delayMs: number;
  clock: Clock;
  logger: Logger;
  faults: Faults;
  accountId: string;
  /** the switches for unsettled evidence; replaced whole by PUT /_emulator/behaviour */
  behaviour: Behaviour;
  historyBudget: HistoryBudget;
  /** the account's calls per second (behaviour.ratePerSecond) and what each account met */
  accountRate: AccountRate;
  webhooks: Webhooks;
}

/** The authenticated caller of a request. */
export interface Caller {
  key: KeyRow;
  user: UserRow;
}

export function account(ctx: EmulatorContext): AccountRow {
  return ctx.db.prepare("SELECT * FROM accounts WHERE uuid = ?").get(ctx.accountId) as AccountRow;
}

export function userById(ctx: EmulatorContext, uuid: string): UserRow | undefined {
  return ctx.db.prepare("SELECT * FROM users WHERE uuid = ?").get(uuid) as UserRow | undefined;
}
