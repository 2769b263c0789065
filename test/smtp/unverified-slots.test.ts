// smtp.senderAuth.maxUnverifiedSessions: on the public MX port, strangers whose address has not
// sent verified mail lately share a few sessions; the rest wait for their greeting, and an address
// that has just sent verified mail is greeted at once. Real SMTP server, real DNS server on
// loopback, real clients from distinct 127.0.0.x addresses.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { senderAuthOff, type UserConfig } from "../../src/config/schema.js";
import { networkOf, UnverifiedSlots } from "../../src/smtp/sender-auth/unverified-slots.js";
import { dkimKey, sendFrom } from "../helpers/dkim-mail.js";
import { startTestDns, type TestDns } from "../helpers/dns-server.js";
import { startTestEmulator, type TestEmulator } from "../helpers/emulator.js";
import { seedWithKeys } from "../helpers/seed.js";
import { RawSmtp } from "../helpers/raw-smtp.js";
import { DOMAIN, PDF, startRig, stopEmulator, USERS, type Rig } from "./harness.js";

const KEY = dkimKey();

describe("UnverifiedSlots: who is greeted when", () => {
  it("a freed slot goes to an address never seen before one refused before; a proven address never waits", () => {
    const slots = new UnverifiedSlots(1);
    const greeted: string[] = [];
    const enter = (id: string, client: string) => slots.enter(id, client, () => greeted.push(id));
    slots.failed("10.0.0.9");
    slots.passed("10.0.0.2");
    expect(enter("a", "10.0.0.1")).toBe("now");
    expect(enter("bad", "10.0.0.9")).toBe("queued");
    expect(enter("new", "10.0.0.3")).toBe("queued");
    expect(enter("good", "10.0.0.2")).toBe("now");
    expect(greeted).toEqual(["a", "good"]);
    slots.leave("good"); // a proven session held no slot: nothing moves
    expect(greeted).toEqual(["a", "good"]);
    slots.leave("a");
    expect(greeted).toEqual(["a", "good", "new"]);
    slots.leave("bad"); // gave up waiting: it is forgotten, and never greeted
    slots.leave("new");
    expect(slots.queued).toBe(0);
    expect(enter("c", "10.0.0.4")).toBe("now");
  });

  it("networks take turns: a flood from one network holds a newcomer from another back by one turn", () => {
    const slots = new UnverifiedSlots(1);
    const greeted: string[] = [];
    const enter = (id: string, client: string) => slots.enter(id, client, () => greeted.push(id));
    expect(enter("first", "198.51.100.1")).toBe("now");
    for (let i = 0; i < 20; i += 1) expect(enter(`flood${i}`, `198.51.100.${10 + i}`)).toBe("queued");
    expect(enter("other", "203.0.113.7")).toBe("queued");
    expect(enter("v6", "2001:db8:0:1::25")).toBe("queued");
    expect(slots.queued).toBe(22);
    slots.leave("first");
    slots.leave("flood0");
    slots.leave("other");
    slots.leave("v6");
    // in turn: the flooding network's first, then each other network, then the flood again
    expect(greeted).toEqual(["first", "flood0", "other", "v6", "flood1"]);
    // one that gives up while waiting is taken out of its network's line
    slots.leave("flood5");
    for (let i = 1; i < 20; i += 1) slots.leave(`flood${i}`);
    expect(greeted.filter((g) => g === "flood5")).toEqual([]);
    expect(slots.queued).toBe(0);
  });

  it("an address's network is its /24 or /64, however the address is written", () => {
    expect(networkOf("198.51.100.77")).toBe("198.51.100");
    expect(networkOf("::ffff:198.51.100.77")).toBe("198.51.100");
    expect(networkOf("2001:db8:0:1::25")).toBe("2001:db8:0:1");
    expect(networkOf("2001:0DB8:0000:0001:0:0:0:99")).toBe("2001:db8:0:1");
    expect(networkOf("2001:db8::1")).toBe("2001:db8:0:0");
    expect(networkOf("::1")).toBe("0:0:0:0");
  });

  it("a remembered address is forgotten after a day", () => {
    let now = 0;
    const slots = new UnverifiedSlots(1, () => now);
    slots.passed("10.0.0.2");
    expect(slots.enter("a", "10.0.0.1", () => undefined)).toBe("now");
    expect(slots.enter("b", "10.0.0.2", () => undefined)).toBe("now");
    now = 24 * 60 * 60_000 + 1;
    expect(slots.enter("c", "10.0.0.2", () => undefined)).toBe("queued");
  });
});

let emu: TestEmulator;
let dns: TestDns;
let rig: Rig;

beforeAll(async () => {
  // each extra user acts as alice or bob at the service, with a key of its own
  emu = await startTestEmulator({ seed: seedWithKeys({ alice: ["carol-print-key"] }) });
  dns = await startTestDns({
    "signed.test": ["v=spf1 ip4:127.0.0.2 -all"],
    "sel._domainkey.signed.test": [KEY.record],
  });
  const users: UserConfig[] = [
    ...USERS,
    { name: "carol", email: "carol@signed.test", aliases: [], apiKey: "carol-print-key" },
  ];
  rig = await startRig(emu, {
    users,
    smtp: {
      trustedNetworks: ["127.0.0.1/32"],
      senderAuth: { ...senderAuthOff(), mode: "verify", maxUnverifiedSessions: 1 },
    },
    dns: { servers: [dns.server], timeout: 500 },
  });
});
afterAll(async () => {
  await rig?.close();
  await dns?.close();
  await stopEmulator(emu);
});

describe("smtp.senderAuth.maxUnverifiedSessions over SMTP", () => {
  it("a second unverified stranger waits for its greeting until the first leaves; a sender verified before is greeted meanwhile", async () => {
    // carol's mail server proves itself once
    const sent = await sendFrom(rig.port, {
      from: "carol@signed.test",
      to: `15551234567@${DOMAIN}`,
      ip: "127.0.0.2",
      sign: { domain: "signed.test", key: KEY.privateKey },
      attachments: [{ filename: "page.pdf", content: PDF, contentType: "application/pdf" }],
    });
    expect(sent).toMatch(/^250 /);

    // a stranger takes the one slot and sits on it
    const first = await RawSmtp.connect(rig.port, "127.0.0.1", "127.0.0.3");
    expect(first.banner).toMatch(/^220 /);
    // another stranger: no greeting while the slot is taken
    let secondGreeted = false;
    const second = RawSmtp.connect(rig.port, "127.0.0.1", "127.0.0.4").then((r) => {
      secondGreeted = true;
      return r;
    });
    // carol's server, connecting after it, is greeted at once: the server has seen both by then
    const proven = await RawSmtp.connect(rig.port, "127.0.0.1", "127.0.0.2");
    expect(proven.banner).toMatch(/^220 /);
    expect(secondGreeted).toBe(false);
    expect(await proven.client.cmd("QUIT")).toMatch(/^221 /);

    // the first leaves: the second is greeted
    expect(await first.client.cmd("QUIT")).toMatch(/^221 /);
    const { client, banner } = await second;
    expect(banner).toMatch(/^220 /);
    expect(await client.cmd("QUIT")).toMatch(/^221 /);
  });

  it("the relay (trustedNetworks) is greeted while strangers hold every unverified slot", async () => {
    const stranger = await RawSmtp.connect(rig.port, "127.0.0.1", "127.0.0.3");
    let waiting = false;
    const queued = RawSmtp.connect(rig.port, "127.0.0.1", "127.0.0.4").then((r) => {
      waiting = true;
      return r;
    });
    const relay = await RawSmtp.connect(rig.port, "127.0.0.1", "127.0.0.1");
    expect(relay.banner).toMatch(/^220 /);
    expect(waiting).toBe(false);
    relay.client.close();
    stranger.client.close();
    (await queued).client.close();
  });
});
