// confirmNewDestinations at the mailbox door, as an office meets it: a real Dovecot mailbox and
// the real daemon. carol's switch is on (users[].confirmNewDestinations); her provider's verdict
// proves her From:, but nothing proves the To: she wrote a number into (Microsoft 365 does not
// sign To/Cc). Her first fax to a new number is taken (done folder) but held: she gets the
// "confirm" mail (where to act in the console) instead of the "accepted" notice, and the emulator gets
// nothing.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { simpleParser } from "mailparser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dovecotMissing, startDovecot, type Dovecot } from "../helpers/dovecot.js";
import { TEST_KEYS } from "../helpers/emulator.js";
import { TEST_USERS } from "../helpers/gateway.js";
import { disposeRig, emulatorFaxes, makeRig, startDaemon, type Daemon, type Rig } from "../faults/harness.js";
import { waitUntil } from "../helpers/wait.js";

const missing = dovecotMissing();
if (missing) console.warn(`mailbox confirm tests skipped: ${missing}`);

const BOX = { user: "fax", password: "mailbox-secret-9" };
const AUTHSERV = "mx.example.net";
const NEW = "+15551239901";

describe.skipIf(missing !== null)("confirmNewDestinations at the mailbox door", () => {
  let dovecot: Dovecot;
  let rig: Rig;
  let daemon: Daemon | null = null;

  const outbox = async () => {
    const dir = path.join(rig.dir, "outbox");
    const names = (() => {
      try {
        return readdirSync(dir).filter((f) => f.endsWith(".eml"));
      } catch {
        return [];
      }
    })();
    return Promise.all(names.map(async (f) => simpleParser(readFileSync(path.join(dir, f)))));
  };

  beforeAll(async () => {
    dovecot = await startDovecot({ [BOX.user]: BOX.password });
    rig = await makeRig({
      config: {
        users: [
          ...TEST_USERS,
          // a third user, with her own switch on
          { name: "carol", email: "carol@example.com", apiKey: TEST_KEYS.aliceBase, confirmNewDestinations: true },
        ],
        imap: {
          mailboxes: [
            {
              host: "127.0.0.1",
              port: dovecot.port,
              tls: "off",
              ...BOX,
              address: "fax@example.com",
              trustedAuthservIds: [AUTHSERV],
              pollInterval: "10m",
            },
          ],
        },
      },
    });
    daemon = await startDaemon(rig);
    await daemon.out.waitFor(/"mailbox":"fax@127.0.0.1"[^\n]*"msg":"mailbox watched"/);
  });

  afterAll(async () => {
    await disposeRig(rig, daemon);
    await dovecot?.dispose();
  });

  it("holds carol's first fax to a new number and mails her where to confirm, not 'accepted'", async () => {
    const raw = [
      `Authentication-Results: ${AUTHSERV}; dkim=pass header.d=example.com; spf=pass smtp.mailfrom=example.com; dmarc=pass (p=reject) header.from=example.com`,
      "From: Carol <carol@example.com>",
      `To: fax+${NEW.slice(1)}@example.com`,
      "Subject: Referral for a new clinic",
      `Message-ID: <confirm-mailbox-${Date.now()}@example.com>`,
      "MIME-Version: 1.0",
      "Content-Type: text/plain; charset=utf-8",
      "",
      "Please fax this letter.",
      "",
    ].join("\r\n");
    await dovecot.deliver(BOX.user, BOX.password, raw);
    await waitUntil(async () => (await dovecot.count(BOX.user, BOX.password, "faxgate-done")) === 1, "taken");
    const mail = await waitUntil(
      async () => (await outbox()).find((m) => /^Confirm your fax to a new number/.test(m.subject ?? "")),
      "the confirm mail",
    );
    expect(mail.subject).toBe(`Confirm your fax to a new number: ${NEW}`);
    expect(mail.to && "text" in mail.to ? mail.to.text : "").toBe("carol@example.com");
    // this gateway has no console address to link: the mail says where to act instead
    expect(mail.text).toContain(
      'confirm it in the fax gateway\'s web console, where it is listed first under "Waiting for you"',
    );
    expect(mail.text).toContain("It has not been sent.");
    // the mailbox's "accepted" notice is skipped for it: the confirm mail says what happens
    await daemon!.out.waitFor(/"kind":"accepted"[^\n]*"msg":"SKIPPED"/);
    expect((await outbox()).some((m) => /accepted|will be faxed/i.test(m.subject ?? ""))).toBe(false);
    expect(daemon!.out.text).toMatch(/"msg":"HELD waits for its owner to confirm a new number in the console"/);
    expect((await emulatorFaxes(rig)).filter((f) => f.faxNumber === NEW)).toEqual([]);
  }, 90_000);
});
