// Leaving through LDAP: a person in the directory sends mail through the gateway; removed from the
// directory, their next mail is refused (550 5.7.1) from the sync on, and a config user of the same
// name keeps winning over the directory while /readyz tells of a sync the directory failed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { converse } from "../helpers/raw-smtp.js";
import { ldapSection, removePerson, seedDirectory, type Slapd, slapdMissing, startSlapd } from "../helpers/slapd.js";
import { waitUntil } from "../helpers/wait.js";

const missing = slapdMissing();

const mailFrom = async (tg: TestGateway, from: string) =>
  (await converse(tg.smtpPort, from, ["15551230000@fax.localhost"], null))[2] ?? "";

describe.skipIf(missing)(`leaving through LDAP${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let slapd: Slapd;
  let tg: TestGateway | null = null;

  beforeAll(async () => {
    slapd = await startSlapd();
    seedDirectory(slapd, [
      { uid: "erin", mail: "erin@example.com" },
      { uid: "fay", mail: "fay@example.com" },
      { uid: "gus", mail: "gus@example.com" },
      { uid: "alice", mail: "alice.ldap@example.com" },
    ]);
  }, 60_000);
  afterAll(async () => {
    await tg?.stop();
    await slapd?.dispose();
  });

  it("a person removed from the directory is refused from the next sync on", async () => {
    tg = await startGateway({
      name: "ldap-leaving",
      config: {
        admin: { listen: "127.0.0.1:0" },
        smtp: { listen: ["127.0.0.1:0"] },
        directory: {
          sync: "1h",
          ldap: ldapSection(slapd),
        },
      },
    });
    // the first start waited for the directory: erin is a person
    expect(await mailFrom(tg, "erin@example.com")).toMatch(/^250 /);
    // alice of users: wins over the directory's alice, whose address is no sender
    expect(await mailFrom(tg, "alice.ldap@example.com")).toMatch(/^550 5\.7\.1 /);
    expect(await mailFrom(tg, "alice@example.com")).toMatch(/^250 /);

    removePerson(slapd, "erin");
    // a sync now (what `faxgate directory sync` asks of the daemon by SIGHUP)
    await tg.reloadWith((c) => c);
    // refused saying why: she has left (not "not a user"), and a stranger is still "not a user"
    await waitUntil(
      async () => /^550 5\.7\.1 .*has left/.test(await mailFrom(tg!, "erin@example.com")),
      "erin refused",
    );
    expect(await mailFrom(tg, "stranger@example.com")).toMatch(/^550 5\.7\.1 .*not a user/);
    expect(await mailFrom(tg, "fay@example.com")).toMatch(/^250 /);

    // the directory goes away: the list stays, /readyz says why
    await slapd.stop();
    await tg.reloadWith((c) => c);
    const ready = await waitUntil(async () => {
      const r = (await (await fetch(`${tg!.url("admin")}/readyz`)).json()) as {
        checks: Record<string, { ok: boolean; detail: string }>;
      };
      return r.checks.directory?.ok === false ? r : null;
    }, "readyz to report the failed sync");
    expect(ready.checks.directory!.detail).toMatch(/not applied: DIRECTORY_UNAVAILABLE.*3 people/);
    expect(await mailFrom(tg, "fay@example.com")).toMatch(/^250 /);
    const metrics = await (await fetch(`${tg.url("admin")}/metrics`)).text();
    expect(metrics).toMatch(/faxgate_directory_sync_ok\{source="ldap"\} 0/);
    await slapd.start();
  }, 120_000);
});
