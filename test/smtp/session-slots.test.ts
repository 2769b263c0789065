// Strangers cannot hold every SMTP slot (issue 36 item 5): a reserve for trustedNetworks, a cap
// per address, and a short life for a session that sends no mail, NOOPs or not. Clients connect
// from distinct loopback addresses (127.0.0.x); only 127.0.0.1 is trusted.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RawSmtp } from "../helpers/raw-smtp.js";
import { startTestEmulator, type TestEmulator } from "../helpers/emulator.js";
import { DOMAIN, PDF, startRig, stopEmulator, transport, withRig } from "./harness.js";

let emu: TestEmulator;
beforeAll(async () => {
  emu = await startTestEmulator();
});
afterAll(async () => stopEmulator(emu));

const TRUSTED = ["127.0.0.1/32"];

async function open(port: number, from: string, n: number): Promise<{ clients: RawSmtp[]; banners: string[] }> {
  const clients: RawSmtp[] = [];
  const banners: string[] = [];
  for (let i = 0; i < n; i += 1) {
    const { client, banner } = await RawSmtp.connect(port, "127.0.0.1", from);
    clients.push(client);
    banners.push(banner);
  }
  return { clients, banners };
}

async function relayDelivers(port: number): Promise<string> {
  const t = transport(port, { localAddress: "127.0.0.1" });
  try {
    const info = await t.sendMail({
      from: "alice@example.com",
      to: `15551234567@${DOMAIN}`,
      subject: "relay",
      attachments: [{ filename: "a.pdf", content: PDF }],
    });
    return info.response;
  } catch (err) {
    return String((err as { response?: string }).response ?? (err as Error).message);
  } finally {
    t.close();
  }
}

describe("SMTP slots", () => {
  for (const reserved of [1, 0]) {
    it(`idle strangers from two addresses fill what they may; the trusted relay ${reserved ? "still delivers" : "is shut out without a reserve"} (reservedTrustedConnections ${reserved})`, async () => {
      const rig = await startRig(emu, {
        smtp: {
          maxConnections: 4,
          maxConnectionsPerClient: 2,
          reservedTrustedConnections: reserved,
          trustedNetworks: TRUSTED,
        },
      });
      const all: RawSmtp[] = [];
      try {
        const a = await open(rig.port, "127.0.0.2", 2);
        const b = await open(rig.port, "127.0.0.3", 2);
        all.push(...a.clients, ...b.clients);
        expect(a.banners.every((x) => x.startsWith("220 "))).toBe(true);
        const strangers = [...a.banners, ...b.banners].filter((x) => x.startsWith("220 ")).length;
        expect(strangers).toBe(4 - reserved);
        const r = await relayDelivers(rig.port);
        if (reserved) expect(r).toMatch(/^250 /);
        else expect(r).toMatch(/^421 /);
      } finally {
        for (const c of all) c.close();
        await rig.close();
      }
    });
  }

  it("a stranger address gets at most maxConnectionsPerClient sessions; a trusted relay is not held to it", async () => {
    await withRig(
      emu,
      { smtp: { maxConnections: 20, maxConnectionsPerClient: 2, trustedNetworks: TRUSTED } },
      async (rig) => {
        const s = await open(rig.port, "127.0.0.4", 3);
        const t = await open(rig.port, "127.0.0.1", 3);
        try {
          expect(s.banners.slice(0, 2).every((x) => x.startsWith("220 "))).toBe(true);
          expect(s.banners[2]).toMatch(/^421 4\.7\.0 Too many connections from your address/);
          expect(t.banners.every((x) => x.startsWith("220 "))).toBe(true);
        } finally {
          for (const c of [...s.clients, ...t.clients]) c.close();
        }
      },
    );
  });

  it("a session kept alive with NOOP and no mail ends after smtp.idleSessionTimeout with 421 4.4.2", async () => {
    await withRig(
      emu,
      { smtp: { idleSessionTimeout: 1500, maxJunkCommands: 1000, socketTimeout: 60_000, trustedNetworks: TRUSTED } },
      async (rig) => {
        // taken before connecting: the session's life runs from its connection, and a greeting
        // slowed by load would otherwise be counted out of it
        const started = Date.now();
        const { client, banner } = await RawSmtp.connect(rig.port, "127.0.0.1", "127.0.0.5");
        expect(banner).toMatch(/^220 /);
        let last = "";
        await client.cmd("EHLO noop.example");
        // each NOOP answered 250 until the session's life runs out
        while (!client.closed && Date.now() - started < 20_000) {
          last = await client.cmd("NOOP");
          if (!last.startsWith("250")) break;
          // fixed wait on purpose: the client's pace is what is under test
          await new Promise((r) => setTimeout(r, 100));
        }
        // the 421 may come between two NOOPs
        if (last.startsWith("250")) last = await client.reply(5000);
        const lived = Date.now() - started;
        expect(last).toMatch(/^421 4\.4\.2 No message in 2 s, closing the session/);
        // a lower bound only (load can only lengthen it): the session was not ended before its
        // time; that it ended at all is the 421 above
        expect(lived).toBeGreaterThanOrEqual(1400);
        expect(await client.reply(5000)).toBe("");
        client.close();
      },
    );
  });
});
