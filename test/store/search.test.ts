// The one search operation (store/sql/search.ts) on both backends: the same faxes kept and sent,
// their text stored by the OCR duty's own store steps, then the same questions asked of SQLite
// (FTS5) and PostgreSQL (tsvector + GIN). The answers must be the same rows in the same order;
// only the ranks' values may differ.
import { afterAll, describe, expect, it } from "vitest";
import type { QueueStore } from "../../src/store/queue-store.js";
import { claimText, textRead } from "../../src/store/sql/received-text.js";
import { type ReceivedSearch, searchFaxes, searchWords } from "../../src/store/sql/search.js";
import { claimSentText, queueSentTexts, sentTextRead } from "../../src/store/sql/sent-text.js";
import { markSent, newJob, receivedInput } from "../helpers/store.js";
import { openBackend, type BackendStore, usePgCluster } from "../helpers/store-backends.js";

const postgres = usePgCluster("search contract: PostgreSQL half");

const FAXES = [
  {
    id: "m-a",
    user: "alice",
    groups: ["referrals"],
    sender: "+15557654321",
    csid: "DR SMITH CLINIC",
    at: "2026-11-20T10:00:00.000Z",
    text: "REFERRAL\nPatient: Maria Alvarez\nAlvarez, Maria - referral for cardiology\nAlvarez again",
  },
  {
    id: "m-b",
    user: "bob",
    groups: [],
    sender: "+15550001111",
    csid: "COUNTY COURT",
    at: "2026-11-21T10:00:00.000Z",
    text: "Notice in matter 2026-114\nThe referral of Mr Alvarez is noted.",
  },
  {
    id: "m-c",
    user: "bob",
    groups: ["referrals"],
    sender: "+15552223333",
    csid: "ACME LAB",
    at: "2026-11-22T10:00:00.000Z",
    text: "Lab results\nGlucose 5.4 mmol/L",
  },
  // no text yet (still pending): found by its fields only
  {
    id: "m-d",
    user: "carol",
    groups: [],
    sender: "+15557654321",
    csid: "DR SMITH CLINIC",
    at: "2026-11-23T10:00:00.000Z",
    text: null,
  },
] as const;

// sent faxes (jobs delivered, their text read by ocr.sent's duty steps)
const SENT = [
  {
    id: "s-a",
    user: "alice",
    numbers: ["+15551230777"],
    at: "2026-11-24T10:00:00.000Z",
    text: "Letter to Dr Jones\nCardiology appointment for Maria Alvarez",
  },
  {
    id: "s-b",
    user: "bob",
    numbers: ["+15559990000", "+15551230777"],
    at: "2026-11-19T10:00:00.000Z",
    text: "Invoice 2026-114\nPayable in thirty days",
  },
] as const;

async function fill(store: QueueStore, dir: string): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  for (const f of FAXES) {
    const { fax } = await store.keepReceived(
      receivedInput({
        messageId: f.id,
        user: f.user,
        sender: f.sender,
        csid: f.csid,
        receivedAt: f.at,
        groups: [...f.groups],
        readText: { waitsUntil: null },
      }),
    );
    ids.set(fax.id, f.id);
  }
  // the duty's own steps: claimed in turn, read (no new PDF: the document stays)
  for (;;) {
    const job = await claimText(store.sql, { leaseMs: 60_000, pick: (u) => u[0]! });
    if (!job) break;
    const f = FAXES.find((x) => x.id === ids.get(job.faxId))!;
    if (f.text === null) break;
    await textRead(store.sql, job.faxId, { body: f.text, pdf: null, pages: 1 });
  }
  for (const f of SENT) {
    const { job } = await store.enqueue(
      newJob(dir, { user: f.user, recipients: f.numbers.map((number) => ({ number })) }),
    );
    await markSent(store, job.id, f.at);
    ids.set(job.id, f.id);
  }
  expect(
    await queueSentTexts(store.sql, { since: "2026-01-01T00:00:00.000Z", changedSince: "2026-01-01T00:00:00.000Z" }),
  ).toBe(2);
  for (;;) {
    const job = await claimSentText(store.sql, { leaseMs: 60_000, pick: (u) => u[0]! });
    if (!job) break;
    await sentTextRead(store.sql, job.jobId, { body: SENT.find((x) => x.id === ids.get(job.jobId))!.text, pages: 1 });
  }
  return ids;
}

const QUESTIONS: Array<[string, Omit<ReceivedSearch, "limit">]> = [
  ["two words, ranked", { words: searchWords("Alvarez referral"), visibleTo: "all" }],
  ["a matter number cut into words", { words: searchWords("matter 2026-114"), visibleTo: "all" }],
  ["a sender's number", { words: searchWords("7654321"), visibleTo: "all" }],
  ["a CSID", { words: searchWords("smith clinic"), visibleTo: "all" }],
  ["bob's own and his group's", { words: searchWords("alvarez"), visibleTo: { user: "bob", groups: ["referrals"] } }],
  ["bob without groups", { words: searchWords("alvarez"), visibleTo: { user: "bob", groups: [] } }],
  [
    "a date range",
    { words: [], from: "2026-11-21T00:00:00.000Z", until: "2026-11-23T00:00:00.000Z", visibleTo: "all" },
  ],
  ["a word nobody wrote", { words: searchWords("tachycardia"), visibleTo: "all" }],
  ["a sent fax's words", { words: searchWords("cardiology appointment"), visibleTo: "all" }],
  ["a word in a sent and a received fax", { words: searchWords("cardiology"), visibleTo: "all" }],
  ["a number dialled by two sent faxes", { words: searchWords("1230777"), visibleTo: "all" }],
  ["alice's sent faxes only", { words: searchWords("1230777"), visibleTo: { user: "alice", groups: [] } }],
  ["not bob's to find", { words: searchWords("cardiology appointment"), visibleTo: { user: "bob", groups: [] } }],
  ["a state: received faxes only", { words: searchWords("1230777 invoice"), states: ["new"], visibleTo: "all" }],
];

type Answer = Array<{ fax: string; kind: string; line: string | null; matched: string[] }>;

async function ask(store: QueueStore, ids: Map<string, string>): Promise<Record<string, Answer>> {
  const out: Record<string, Answer> = {};
  for (const [name, q] of QUESTIONS) {
    const hits = await searchFaxes(store.sql, { ...q, limit: 20 });
    out[name] = hits.map((h) => ({
      fax: ids.get(h.kind === "received" ? h.fax.id : h.job.id)!,
      kind: h.kind,
      line: h.line,
      matched: h.matched,
    }));
  }
  return out;
}

const opened: BackendStore[] = [];
afterAll(async () => {
  for (const b of opened) await b.cleanup();
});

describe("search over received faxes", () => {
  let sqliteAnswers: Record<string, Answer> = {};

  it("SQLite (FTS5) answers each question as a person would expect", async () => {
    const b = await openBackend("sqlite", null);
    opened.push(b);
    sqliteAnswers = await ask(b.store, await fill(b.store, b.dir));
    const faxes = (name: string) => sqliteAnswers[name]!.map((a) => a.fax);
    // m-a says Alvarez three times and referral twice: ranked above m-b's once each
    expect(faxes("two words, ranked")).toEqual(["m-a", "m-b"]);
    expect(sqliteAnswers["two words, ranked"]![0]!.line).toBe("Alvarez, Maria - referral for cardiology");
    expect(faxes("a matter number cut into words")).toEqual(["m-b"]);
    expect(sqliteAnswers["a matter number cut into words"]![0]!.line).toBe("Notice in matter 2026-114");
    // the sender's number: m-d has no text yet and is found all the same
    expect(faxes("a sender's number")).toEqual(["m-d", "m-a"]);
    expect(sqliteAnswers["a sender's number"]![0]!.matched).toEqual(["sender"]);
    expect(faxes("a CSID")).toEqual(["m-d", "m-a"]);
    expect(faxes("bob's own and his group's")).toEqual(["m-a", "m-b"]);
    expect(faxes("bob without groups")).toEqual(["m-b"]);
    expect(faxes("a date range")).toEqual(["m-c", "m-b"]);
    expect(faxes("a word nobody wrote")).toEqual([]);
    // sent faxes: by their text, each said to be sent, with its line
    expect(sqliteAnswers["a sent fax's words"]).toEqual([
      { fax: "s-a", kind: "sent", line: "Cardiology appointment for Maria Alvarez", matched: ["text"] },
    ]);
    // each the first of its kind: they take turns, the newer first
    expect(faxes("a word in a sent and a received fax")).toEqual(["s-a", "m-a"]);
    // by the number dialled: the newest first; bob's s-b dialled it second
    expect(faxes("a number dialled by two sent faxes")).toEqual(["s-a", "s-b"]);
    expect(sqliteAnswers["a number dialled by two sent faxes"]![1]!.matched).toEqual(["dialled"]);
    expect(faxes("alice's sent faxes only")).toEqual(["s-a"]);
    expect(faxes("not bob's to find")).toEqual([]);
    expect(faxes("a state: received faxes only")).toEqual([]);
  });

  it.skipIf(postgres.missing !== null)("PostgreSQL (tsvector, GIN) gives the same rows in the same order", async () => {
    const b = await openBackend("postgres", postgres.cluster);
    opened.push(b);
    const pgAnswers = await ask(b.store, await fill(b.store, b.dir));
    expect(pgAnswers).toEqual(sqliteAnswers);
  });
});
