// Second-factor steps under way (store/sql/factor-pending.ts) on a real SQLite store: kept under
// the hash of their id, ended once, a challenge or sealed secret taken once, gone when expired,
// and bounded per person with the newest kept (a flood of first steps cannot lock the person out
// nor grow the table); and the ID tokens provider sessions sign out with. The same statements
// on PostgreSQL: test/web/sign-in-factors-fleet.test.ts and sign-in-oidc-fleet.test.ts.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FactorPending, MAX_PER_PERSON } from "../../src/store/sql/factor-pending.js";
import { putOidcIdToken, takeOidcIdToken } from "../../src/store/sql/oidc-id-tokens.js";
import { manualClock } from "../helpers/store.js";
import { openBackend, type BackendStore } from "../helpers/store-backends.js";

const TEN_MIN = 10 * 60_000;

describe("second-factor steps under way, in the store", () => {
  let b: BackendStore;
  let clock: ReturnType<typeof manualClock>;
  let pending: FactorPending;

  beforeEach(async () => {
    clock = manualClock();
    b = await openBackend("sqlite", null, { clock });
    pending = new FactorPending(b.store.sql, clock.now);
  });
  afterEach(() => b.cleanup());

  const count = async () =>
    Number((await b.store.sql.get<{ n: number }>("SELECT count(*) AS n FROM factor_pending"))!.n);

  it("keeps a sign-in under its id's hash, never the id, and ends it once", async () => {
    const at = { kind: "sign-in" as const, id: "cookie-value-abc" };
    await pending.begin(at, "ops", "password", clock.now() + TEN_MIN);
    expect(await pending.get(at)).toMatchObject({ user: "ops", via: "password", challenge: null });
    const rows = await b.store.sql.all("SELECT * FROM factor_pending");
    expect(JSON.stringify(rows)).not.toContain("cookie-value-abc");
    // the same id as another kind is not it
    expect(await pending.get({ kind: "enrol", id: at.id })).toBeNull();
    expect(await pending.end(at)).toBe(true);
    expect(await pending.end(at)).toBe(false);
    expect(await pending.get(at)).toBeNull();
  });

  it("a challenge and a sealed secret are taken once; an expired step is gone", async () => {
    const at = { kind: "sign-in" as const, id: "s1" };
    await pending.begin(at, "ops", "oidc", clock.now() + TEN_MIN);
    expect(await pending.set(at, "challenge", "ch-1")).toBe(true);
    expect(await pending.set(at, "sealed_secret", "v1.sealed")).toBe(true);
    expect(await pending.take(at, "challenge", "ch-1")).toBe(true);
    expect(await pending.take(at, "challenge", "ch-1")).toBe(false);
    expect((await pending.get(at))?.sealedSecret).toBe("v1.sealed");
    // a value other than the one handed out takes nothing
    expect(await pending.take(at, "sealed_secret", "v1.other")).toBe(false);
    clock.advance(TEN_MIN);
    expect(await pending.get(at)).toBeNull();
    expect(await pending.take(at, "sealed_secret", "v1.sealed")).toBe(false);
    expect(await pending.set(at, "challenge", "ch-2")).toBe(false);
    expect(await pending.end(at)).toBe(false);
  });

  it("an enrolment of one session is one row: begun again, its expiry renewed and its ceremony kept", async () => {
    const at = { kind: "enrol" as const, id: "session-1" };
    await pending.begin(at, "alice", null, clock.now() + TEN_MIN);
    await pending.set(at, "sealed_secret", "v1.x");
    clock.advance(TEN_MIN - 1000);
    await pending.begin(at, "alice", null, clock.now() + TEN_MIN);
    clock.advance(5000);
    expect((await pending.get(at))?.sealedSecret).toBe("v1.x");
    expect(await count()).toBe(1);
  });

  it("bounded: expired rows are cleared, and a person keeps only their newest few", async () => {
    for (let i = 0; i < 50; i++) {
      clock.advance(1);
      await pending.begin({ kind: "sign-in", id: `flood-${i}` }, "ops", "password", clock.now() + TEN_MIN);
    }
    expect(await count()).toBe(MAX_PER_PERSON);
    // the real person's latest sign-in is one of those kept
    expect(await pending.get({ kind: "sign-in", id: "flood-49" })).not.toBeNull();
    expect(await pending.get({ kind: "sign-in", id: "flood-0" })).toBeNull();
    // someone else's sign-in is not pushed out by them
    await pending.begin({ kind: "sign-in", id: "alice-1" }, "alice", "password", clock.now() + TEN_MIN);
    expect(await count()).toBe(MAX_PER_PERSON + 1);
    // the same clock for every one of them (one millisecond): still the newest is kept
    for (let i = 0; i < 10; i++)
      await pending.begin({ kind: "sign-in", id: `same-${i}` }, "bob", "password", clock.now() + TEN_MIN);
    expect(await pending.get({ kind: "sign-in", id: "same-9" })).not.toBeNull();
    // ten minutes on, a new first step clears every expired one
    clock.advance(TEN_MIN);
    await pending.begin({ kind: "sign-in", id: "later" }, "carol", "password", clock.now() + TEN_MIN);
    expect(await count()).toBe(1);
  });
});

describe("provider sessions' ID tokens, in the store", () => {
  it("kept under the session id's hash until the session's end, taken once", async () => {
    const clock = manualClock();
    const b = await openBackend("sqlite", null, { clock });
    try {
      const db = b.store.sql;
      await putOidcIdToken(db, "session-abc", "v1.sealed-token", clock.now() + 60_000, clock.now());
      expect(JSON.stringify(await db.all("SELECT * FROM oidc_id_tokens"))).not.toContain("session-abc");
      expect(await takeOidcIdToken(db, "session-abc", clock.now())).toBe("v1.sealed-token");
      expect(await takeOidcIdToken(db, "session-abc", clock.now())).toBeNull();
      await putOidcIdToken(db, "session-old", "v1.x", clock.now() + 60_000, clock.now());
      clock.advance(60_000);
      expect(await takeOidcIdToken(db, "session-old", clock.now())).toBeNull();
      // an expired one is cleared as the next is kept
      await putOidcIdToken(db, "session-a", "v1.y", clock.now() + 60_000, clock.now());
      await putOidcIdToken(db, "session-gone", "v1.z", clock.now() + 1, clock.now());
      clock.advance(2);
      await putOidcIdToken(db, "session-b", "v1.w", clock.now() + 60_000, clock.now());
      expect((await db.all("SELECT session_hash FROM oidc_id_tokens")).length).toBe(2);
    } finally {
      await b.cleanup();
    }
  });
});
