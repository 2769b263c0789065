// Leaving, end to end through one running gateway (issue 50, "Show it"): the daemon itself
// (`faxgate start`), a private slapd, the emulator over HTTPS, a private cupsd, a Dovecot mailbox
// and an OpenID provider for the console. Erin faxes by SMTP; the fax is still at the service
// (the emulator's clock holds it in processing) when she is removed from LDAP and
// `faxgate directory sync` runs. Then every door refuses her saying she has left: her SMTP mail
// (550 5.7.1), a file in her print folder (failed/ with the reason), a CUPS job (cancelled with
// the reason), a mailbox message (to the failed folder), her console session (401); her minted
// key is gone at the service; and her earlier fax still ends delivered, followed with the admin
// key. Then the same for kit, pushed over SCIM and set `active:false` as Entra ID does: at once,
// without a sync. CUPS, Dovecot and slapd parts skip saying why where the tool is absent.
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFaxAgent, FaxClient } from "../../src/fax/client.js";
import {
  cupsSkipReason,
  type LocalAccount,
  PPD,
  type PrivateCupsd,
  startPrivateCupsd,
  throwawayAccount,
} from "../cups/private-cupsd.js";
import { runCli } from "../helpers/cli.js";
import { type Dovecot, dovecotMissing, startDovecot } from "../helpers/dovecot.js";
import { TEST_KEYS } from "../helpers/emulator.js";
import { startDaemon, type TestDaemon } from "../helpers/gateway.js";
import { freePort } from "../helpers/net.js";
import { oidcSection, signInThroughProvider, startOidcProvider, type TestProvider } from "../helpers/oidc.js";
import { converse } from "../helpers/raw-smtp.js";
import { ldapSection, removePerson, seedDirectory, type Slapd, slapdMissing, startSlapd } from "../helpers/slapd.js";
import { waitUntil } from "../helpers/wait.js";

const missing = slapdMissing();
const cupsMissing = cupsSkipReason();
const mailboxMissing = dovecotMissing();
if (cupsMissing) console.warn(`leaving end to end: the CUPS door is skipped: ${cupsMissing}`);
if (mailboxMissing) console.warn(`leaving end to end: the mailbox door is skipped: ${mailboxMissing}`);

const SEAL = "seal-key-for-tests-0123456789abcdef";
const SCIM_TOKEN = "scim-token-for-tests-0123456789abcdef";
const BOX = { user: "fax", password: "mailbox-secret-1" };
const AUTHSERV = "mx.example.net";
const HOUR = 3_600_000;
const USER = "urn:ietf:params:scim:schemas:core:2.0:User";
const PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
const PDF = "%PDF-1.4\n% a page for the fax\n%%EOF\n";

/** The emulator's clock: real time plus what the test moves it on by (faxes take an hour there). */
const skew = { ms: 0 };
const serviceClock = { now: () => Date.now() + skew.ms };

const mail = (from: string, subject: string) =>
  `From: ${from}\r\nTo: 15551230400@fax.localhost\r\nSubject: ${subject}\r\n\r\nA page for the fax.\r\n`;

/** A message in the office mailbox as its provider delivers it, its verdict on top. */
const boxMessage = (from: string, subject: string) =>
  [
    `Authentication-Results: ${AUTHSERV}; dkim=pass header.d=example.com; spf=pass smtp.mailfrom=example.com; dmarc=pass (p=reject) header.from=example.com`,
    `From: ${from}`,
    "To: fax+15551230401@example.com",
    `Subject: ${subject}`,
    `Message-ID: <leaving-${subject.replace(/\W/g, "")}-${Date.now()}@example.com>`,
    `Date: ${new Date().toUTCString()}`,
    "Content-Type: text/plain; charset=utf-8",
    "",
    "Please fax this letter.",
    "",
  ].join("\r\n");

describe.skipIf(missing)(`leaving, end to end through the daemon${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let slapd: Slapd;
  let provider: TestProvider;
  let d: TestDaemon;
  let cups: PrivateCupsd | null = null;
  let dovecot: Dovecot | null = null;
  /** erin's and kit's local accounts (their CUPS user names, and so their directory names); fay stays */
  let erinAccount: LocalAccount | null = null;
  let kitAccount: LocalAccount | null = null;
  let erin = "erin";
  let kit = "kit";
  let providerAgent: Agent;
  let serviceAgent: ReturnType<typeof createFaxAgent>;
  let webOrigin: string;
  /** the service's user erin and fay fax as */
  let bobId = "";

  beforeAll(async () => {
    if (!cupsMissing) {
      erinAccount = throwawayAccount("erin");
      erin = erinAccount.name;
      kitAccount = throwawayAccount("kit");
      kit = kitAccount.name;
    }
    slapd = await startSlapd();
    if (!mailboxMissing) dovecot = await startDovecot({ [BOX.user]: BOX.password });
    const webPort = await freePort();
    webOrigin = `http://127.0.0.1:${webPort}`;
    provider = await startOidcProvider({
      accounts: {
        erin: { email: "erin@example.com", groups: ["fax-users"] },
        fay: { email: "fay@example.com", groups: ["fax-users"] },
        kit: { email: "kit@example.com", groups: ["fax-users"] },
      },
      redirectUri: `${webOrigin}/oidc/callback`,
      postLogoutRedirectUri: `${webOrigin}/login.html`,
    });
    providerAgent = new Agent({ connect: { ca: readFileSync(provider.caFile, "utf8") } });
    d = await startDaemon({
      name: "leaving-e2e",
      emulator: { delayMs: HOUR, clock: serviceClock },
      // cupsd's backend reaches the spool inside the folder
      prepare: (dir) => chmodSync(dir, 0o755),
      config: ({ dir, emu }) => {
        // erin and fay are the service's user bob there (a key is minted for each)
        bobId = emu.keys.find((k) => k.token === TEST_KEYS.bob)!.userId;
        seedDirectory(slapd, [
          { uid: erin, mail: "erin@example.com", serviceUserId: bobId },
          { uid: "fay", mail: "fay@example.com", serviceUserId: bobId },
          // a small office: one leaver is within directory.maxDrop (a quarter)
          ...["gus", "hal", "ivy"].map((uid) => ({ uid, mail: `${uid}@example.com` })),
        ]);
        return {
          api: { adminKey: TEST_KEYS.admin },
          queue: { pollInterval: "300ms" },
          smtp: { listen: ["127.0.0.1:0"] },
          spool: { root: path.join(dir, "spool"), stableFor: "150ms" },
          web: {
            listen: `127.0.0.1:${webPort}`,
            publicUrl: webOrigin,
            oidc: oidcSection(provider, { groups: ["fax-users"] }),
          },
          notify: { from: "faxgate@fax.example.com", transport: `outbox:${path.join(dir, "outbox")}` },
          directory: {
            sync: "24h",
            ldap: ldapSection(slapd, { attributes: { serviceUserId: "faxServiceUserId" } }),
            scim: { token: SCIM_TOKEN },
            keys: { sealKey: SEAL, lifetime: "30d" },
          },
          ...(dovecot
            ? {
                imap: {
                  mailboxes: [
                    {
                      host: "127.0.0.1",
                      port: dovecot.port,
                      tls: "off",
                      pollInterval: "10m",
                      ...BOX,
                      address: "fax@example.com",
                      trustedAuthservIds: [AUTHSERV],
                    },
                  ],
                },
              }
            : {}),
        };
      },
    });
    serviceAgent = createFaxAgent({ ca: d.emu.caPem });
    if (!cupsMissing) {
      cups = await startPrivateCupsd({ policy: true });
      const spoolRoot = path.join(d.dir, "spool");
      chmodSync(spoolRoot, 0o750);
      cups.run("lpadmin", [
        "-p",
        "fax",
        "-E",
        "-v",
        `faxgate:${spoolRoot}`,
        "-P",
        PPD,
        "-o",
        "printer-op-policy=faxgate",
      ]);
    }
    if (dovecot) await d.out.waitFor(/"msg":"mailbox watched"/);
  }, 180_000);

  afterAll(async () => {
    await cups?.stop();
    await d?.stop();
    await dovecot?.dispose();
    await provider?.stop();
    await providerAgent?.close();
    await serviceAgent?.close();
    await slapd?.dispose();
    erinAccount?.remove();
    kitAccount?.remove();
  });

  const smtpPort = () => d.addresses.smtp[0]!.port;
  const mailFrom = async (from: string) =>
    (await converse(smtpPort(), from, ["15551230400@fax.localhost"], null))[2] ?? "";
  const admin = () => new FaxClient({ baseUrl: d.emu.baseUrl, apiKey: TEST_KEYS.admin, dispatcher: serviceAgent });
  const mintedFor = async (person: string) =>
    (await admin().listApiKeys(bobId)).filter((k) => k.name === `faxgate ${person}`);
  const cli = (...args: string[]) => runCli([...args, "--config", d.configFile], { cwd: d.dir, timeoutMs: 60_000 });
  const jobs = async () => {
    const r = await cli("jobs", "--json");
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as Array<{
      id: string;
      user: string;
      state: string;
      recipients: Array<{ state: string }>;
    }>;
  };
  const sessionStatus = async (session: string) =>
    (await request(`${webOrigin}/api/session`, { headers: { cookie: `faxgate_session=${session}` } })).statusCode;

  const scim = async (method: string, p: string, body: unknown) => {
    const res = await request(`${webOrigin}/scim/v2${p}`, {
      method: method as "POST" | "PATCH",
      headers: { authorization: `Bearer ${SCIM_TOKEN}`, "content-type": "application/scim+json" },
      body: JSON.stringify(body),
    });
    return { status: res.statusCode, body: (await res.body.json()) as { id: string } };
  };

  /** A person who can fax: their key minted, signed in to the console, a fax of theirs at the service. */
  async function faxingPerson(name: string, account: string, email: string) {
    const [key] = await waitUntil(
      async () => ((await mintedFor(name)).length === 1 ? mintedFor(name) : null),
      `${name}'s minted key`,
    );
    const session = await signInThroughProvider(webOrigin, account, providerAgent);
    expect(await sessionStatus(session)).toBe(200);
    // the service holds the fax in processing (its clock says an hour to go)
    const sent = await converse(smtpPort(), email, ["15551230400@fax.localhost"], mail(email, "before"));
    const queued = /queued as (\S+)/.exec(sent.at(-2) ?? "");
    expect(queued, sent.join(" | ")).not.toBeNull();
    const jobId = queued![1]!;
    await waitUntil(
      async () => (await jobs()).find((j) => j.id === jobId && j.recipients[0]?.state === "processing"),
      `${name}'s fax at the service`,
    );
    const folder = path.join(d.dir, "spool", name);
    expect(existsSync(folder), `${name}'s print folder, made for them`).toBe(true);
    return { session, jobId, folder, token: key!.token! };
  }

  /** After leaving: refused at every door saying so, the key gone, the earlier fax finished. */
  async function everyDoorRefuses(
    who: { name: string; email: string; account: LocalAccount | null },
    was: { session: string; jobId: string; folder: string; token: string },
  ) {
    // SMTP: 5.7.1 saying they have left; fay still faxes
    await waitUntil(
      async () => /^550 5\.7\.1 .*has left/.test(await mailFrom(who.email)),
      `${who.name}'s mail refused`,
    );
    expect(await mailFrom("fay@example.com")).toMatch(/^250 /);

    // the key is gone at the service; fay's is not
    await waitUntil(async () => (await mintedFor(who.name)).length === 0, `${who.name}'s key deleted at the service`);
    expect(await mintedFor("fay")).toHaveLength(1);

    // the console session has ended
    await waitUntil(async () => (await sessionStatus(was.session)) === 401, `${who.name}'s session ended`);

    // the print folder: a file put there goes to failed/ with the reason, nothing queued
    await writeFile(path.join(was.folder, "letter-5551230402.pdf"), PDF);
    const reasonFile = path.join(was.folder, "failed", "letter-5551230402.pdf.reason.txt");
    await waitUntil(() => existsSync(reasonFile), "the print file refused into failed/", 20_000);
    expect(readFileSync(reasonFile, "utf8")).toMatch(/has left/);

    // CUPS: the job is cancelled by the backend saying why
    if (cups && who.account) {
      const doc = path.join(d.dir, `cups-letter-${who.name}.pdf`);
      writeFileSync(doc, PDF);
      chmodSync(doc, 0o644);
      const r = cups.lpAs(who.account, ["-d", "fax", "-o", "fax-number=5551230403", doc]);
      expect(r.status, r.out).toBe(0); // cupsd takes the job; the backend refuses it
      // cupsd's log writes the backend's quotes escaped
      const refused = new RegExp(
        `\\[Job \\d+\\] faxgate: \\\\?"${who.name}\\\\?" has left: the directory ended their access`,
      );
      await waitUntil(() => refused.test(cups!.errorLog()), "the CUPS job refused", 30_000);
    }

    // the mailbox: the message is refused into the failed folder, with no fax
    if (dovecot) {
      const failedBefore = await dovecot.count(BOX.user, BOX.password, "faxgate-failed").catch(() => 0);
      await dovecot.deliver(BOX.user, BOX.password, boxMessage(`Someone <${who.email}>`, `after ${who.name}`));
      await waitUntil(
        async () => (await dovecot!.count(BOX.user, BOX.password, "faxgate-failed")) === failedBefore + 1,
        `${who.name}'s mailbox message refused`,
        30_000,
      );
      const reason = new RegExp(
        `"reason":"${who.email.replace(".", "\\.")} has left: the directory ended[^"]*","msg":"REJECTED mailbox message"`,
      );
      await d.out.waitFor(reason);
    }

    // nothing of theirs was queued after they left: their one job is the fax from before
    expect((await jobs()).filter((j) => j.user === who.name).map((j) => j.id)).toEqual([was.jobId]);

    // the service finishes the fax; the gateway follows it (on the admin key) to delivered
    skew.ms += 2 * HOUR;
    await waitUntil(
      async () => (await jobs()).find((j) => j.id === was.jobId && j.state === "delivered"),
      `${who.name}'s earlier fax delivered`,
      30_000,
    );
    // the daemon's output never holds the minted key
    expect(was.token.length).toBeGreaterThan(16);
    expect((d.out.text + d.err.text).includes(was.token), "the minted key in the daemon's output").toBe(false);
  }

  it("a person removed from LDAP is refused at every door after one sync; her accepted fax is finished", async () => {
    const was = await faxingPerson(erin, "erin", "erin@example.com");
    // erin is removed from the directory; the operator runs the sync
    removePerson(slapd, erin);
    const sync = await cli("directory", "sync");
    expect(sync.code, sync.stderr).toBe(0);
    expect(sync.stdout).toMatch(/1 removed/);
    await everyDoorRefuses({ name: erin, email: "erin@example.com", account: erinAccount }, was);
  }, 240_000);

  it("a person set active:false over SCIM is refused at every door at once, without a sync", async () => {
    // Entra ID pushes kit; the operator maps kit to the service's user (no sync runs after this)
    const created = await scim("POST", "/Users", {
      schemas: [USER],
      userName: kit,
      active: true,
      emails: [{ primary: true, type: "work", value: "kit@example.com" }],
    });
    expect(created.status).toBe(201);
    const mapped = await cli("directory", "map", kit, bobId);
    expect(mapped.code, mapped.stderr).toBe(0);
    const was = await faxingPerson(kit, "kit", "kit@example.com");
    // Entra ID disables kit, in its own words (mixed case op, "False" as a string)
    const off = await scim("PATCH", `/Users/${created.body.id}`, {
      schemas: [PATCH],
      Operations: [{ op: "Replace", path: "active", value: "False" }],
    });
    expect(off.status).toBe(200);
    await everyDoorRefuses({ name: kit, email: "kit@example.com", account: kitAccount }, was);
  }, 240_000);
});
