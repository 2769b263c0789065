// The replay record of signed mail (store/signed-uses.ts) on both backends: a number once per
// message, a whole-message use against any other, the same claimant again (a mailbox message
// after a crash), a claim given back, old rows forgotten, and another instance on the same queue
// seeing the record.
import { describe, expect, it } from "vitest";
import { WHOLE_MESSAGE } from "../../src/store/signed-uses.js";
import { type BackendName, usePgCluster } from "../helpers/store-backends.js";

const postgres = usePgCluster("signed uses on PostgreSQL");

const LONG_AGO = new Date("2000-01-01T00:00:00Z");

describe.each(["sqlite", "postgres"] as BackendName[])("signed mail's replay record on %s", (backend) => {
  const open = () => postgres.open(backend);

  it.skipIf(postgres.skips(backend))(
    "each number once per key; whole-message uses conflict with any; the same claimant may claim again",
    async () => {
      const { store, reopen } = await open();
      const use = (keys: string[], recipients: string[], claim: string) =>
        store.useSignedMessage({ keys, recipients, claim, purgeBefore: LONG_AGO });
      expect(await use(["dkim:a", "mid:a"], ["+1555A"], "c1")).toEqual({ ok: true });
      // a split delivery's next number: taken
      expect(await use(["dkim:a", "mid:a"], ["+1555B"], "c2")).toEqual({ ok: true });
      // the first number again, by the signature or by the Message-ID alone: refused, saying when
      const again = await use(["mid:a"], ["+1555A"], "c3");
      expect(again).toMatchObject({ ok: false, recipient: "+1555A" });
      expect((again as { usedAt: string }).usedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
      // the whole message against numbers already used, and numbers against a whole-message use
      expect(await use(["dkim:a"], [WHOLE_MESSAGE], "c4")).toMatchObject({ ok: false });
      expect(await use(["dkim:w"], [WHOLE_MESSAGE], "m1")).toEqual({ ok: true });
      expect(await use(["dkim:w"], ["+1555C"], "c5")).toMatchObject({ ok: false, recipient: WHOLE_MESSAGE });
      // the same claimant (a mailbox message found again after a crash) is not a copy
      expect(await use(["dkim:w"], [WHOLE_MESSAGE], "m1")).toEqual({ ok: true });
      // another instance on the same queue sees all of it
      const other = await reopen();
      expect(
        await other.useSignedMessage({ keys: ["dkim:a"], recipients: ["+1555B"], claim: "x", purgeBefore: LONG_AGO }),
      ).toMatchObject({ ok: false, recipient: "+1555B" });
    },
  );

  it.skipIf(postgres.skips(backend))(
    "a claim given back frees the message; rows older than purgeBefore are forgotten",
    async () => {
      const { store } = await open();
      expect(
        await store.useSignedMessage({ keys: ["k"], recipients: ["+1"], claim: "c1", purgeBefore: LONG_AGO }),
      ).toEqual({ ok: true });
      await store.releaseSignedMessage("c1");
      expect(
        await store.useSignedMessage({ keys: ["k"], recipients: ["+1"], claim: "c2", purgeBefore: LONG_AGO }),
      ).toEqual({ ok: true });
      // a purge horizon in the future forgets c2's row before the check
      expect(
        await store.useSignedMessage({
          keys: ["k"],
          recipients: ["+1"],
          claim: "c3",
          purgeBefore: new Date(Date.now() + 60_000),
        }),
      ).toEqual({ ok: true });
    },
  );
});
