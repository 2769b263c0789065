// The OCR duty's rows (store/sql/text-duty.ts) on both backends and both tables: a received fax's
// text and a sent fax's are claimed under a lease, tried again at the time given, claimed again
// when a lease ends, given up or found unreadable, each outcome said once on the owner's
// timeline; the counts by state follow.
import { afterAll, describe, expect, it } from "vitest";
import type { QueueStore } from "../../src/store/queue-store.js";
import { claimText, getReceivedText, textFailed, textUnreadable } from "../../src/store/sql/received-text.js";
import {
  claimSentText,
  getSentText,
  queueSentTexts,
  sentTextFailed,
  sentTextUnreadable,
} from "../../src/store/sql/sent-text.js";
import { textRowCounts } from "../../src/store/sql/text-duty.js";
import { markSent, newJob, receivedInput } from "../helpers/store.js";
import { openBackend, type BackendName, type BackendStore, usePgCluster } from "../helpers/store-backends.js";

const postgres = usePgCluster("text duty contract: PostgreSQL half");

/** One table of the duty as a test drives it: add an owner, claim, finish, read back. */
interface Side {
  add(b: BackendStore, n: number): Promise<string>;
  claim(s: QueueStore, leaseMs: number): Promise<{ id: string; attempts: number } | null>;
  failed(s: QueueStore, id: string, why: string, retryAt: Date | null): Promise<boolean>;
  unreadable(s: QueueStore, id: string, why: string): Promise<boolean>;
  get(s: QueueStore, id: string): Promise<{ state: string; attempts: number; lastError: string | null } | null>;
  timeline(s: QueueStore, id: string): Promise<string[]>;
}

const pick = (users: string[]) => users[0]!;

const SIDES: Record<"received" | "sent", Side> = {
  received: {
    add: async (b, n) =>
      (await b.store.keepReceived(receivedInput({ messageId: `text-duty-${n}`, readText: { waitsUntil: null } }))).fax
        .id,
    claim: async (s, leaseMs) => {
      const r = await claimText(s.sql, { leaseMs, pick });
      return r && { id: r.faxId, attempts: r.attempts };
    },
    failed: (s, id, why, at) => textFailed(s.sql, id, why, at),
    unreadable: (s, id, why) => textUnreadable(s.sql, id, why),
    get: (s, id) => getReceivedText(s.sql, id),
    timeline: async (s, id) => (await s.listReceivedEvents(id)).map((e) => `${e.action}: ${e.detail}`),
  },
  sent: {
    add: async (b) => {
      const { job } = await b.store.enqueue(newJob(b.dir, {}));
      await markSent(b.store, job.id);
      const since = "2026-01-01T00:00:00.000Z";
      expect(await queueSentTexts(b.store.sql, { since, changedSince: since })).toBe(1);
      return job.id;
    },
    claim: async (s, leaseMs) => {
      const r = await claimSentText(s.sql, { leaseMs, pick });
      return r && { id: r.jobId, attempts: r.attempts };
    },
    failed: (s, id, why, at) => sentTextFailed(s.sql, id, why, at),
    unreadable: (s, id, why) => sentTextUnreadable(s.sql, id, why),
    get: (s, id) => getSentText(s.sql, id),
    timeline: async (s, id) =>
      (await s.listEvents(id))
        .filter((e) => e.transition.startsWith("text"))
        .map((e) => `${e.transition}: ${e.detail}`),
  },
};

/** What each side's timeline says of a give-up and an unreadable text (the words differ by owner). */
const SAYS = {
  received: {
    failed: "text failed: OCR failed; the fax is kept as it came (the reader broke)",
    unreadable: "text unreadable: OCR could not read it; the fax is kept as it came (no words)",
  },
  sent: {
    failed: "text failed: OCR failed (the reader broke)",
    unreadable: "text unreadable: text unreadable (no words)",
  },
};

const opened: BackendStore[] = [];
afterAll(async () => {
  for (const b of opened) await b.cleanup();
});

const BACKENDS: BackendName[] = ["sqlite", "postgres"];
describe.each(BACKENDS)("the OCR duty's rows on %s", (backend) => {
  describe.each(["received", "sent"] as const)("a %s fax's text", (kind) => {
    const side = SIDES[kind];
    it.skipIf(postgres.skips(backend))(
      "is claimed, tried again, claimed after its lease, given up; another found unreadable",
      async () => {
        const b = await openBackend(backend, postgres.cluster);
        opened.push(b);
        const s = b.store;
        const id = await side.add(b, 1);
        expect(await side.claim(s, 60_000)).toEqual({ id, attempts: 1 });
        // under its lease: nobody else has it
        expect(await side.claim(s, 60_000)).toBeNull();
        // tried again at the time given: not claimed before it
        expect(await side.failed(s, id, "the reader broke", new Date(Date.now() + 3_600_000))).toBe(true);
        expect(await side.get(s, id)).toMatchObject({ state: "pending", attempts: 1, lastError: "the reader broke" });
        expect(await side.claim(s, 60_000)).toBeNull();
        await s.sql.run(`UPDATE ${kind}_text SET next_attempt_at = ?`, [new Date(0).toISOString()]);
        // a lease already over: the run died, and the row is claimed again
        expect(await side.claim(s, -1_000)).toEqual({ id, attempts: 2 });
        expect(await side.claim(s, 60_000)).toEqual({ id, attempts: 3 });
        // a retry only once, by the runner that holds it
        expect(await side.failed(s, id, "the reader broke", null)).toBe(true);
        expect(await side.failed(s, id, "the reader broke", null)).toBe(false);
        expect(await side.get(s, id)).toMatchObject({ state: "failed", attempts: 3 });

        const other = await side.add(b, 2);
        expect((await side.claim(s, 60_000))?.id).toBe(other);
        expect(await side.unreadable(s, other, "no words")).toBe(true);
        expect(await side.unreadable(s, other, "no words")).toBe(false);
        expect(await side.get(s, other)).toMatchObject({ state: "unreadable", lastError: "no words" });

        expect(await side.timeline(s, id)).toEqual([
          ...(kind === "received" ? ["stored: test"] : []),
          SAYS[kind].failed,
        ]);
        expect((await side.timeline(s, other)).at(-1)).toBe(SAYS[kind].unreadable);
        if (kind === "received")
          expect(await textRowCounts(s.sql, "received_text")).toEqual({
            pending: 0,
            running: 0,
            done: 0,
            unreadable: 1,
            failed: 1,
          });
      },
      60_000,
    );
  });
});
