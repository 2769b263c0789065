// Who waits for the 220 greeting (issue 54 item 1): a relay in trustedNetworks and every client
// of a listener where AUTH is required are greeted at once, with no pause of smtp-server's own
// (earlyTalkerDelay 0, patches/smtp-server+exact-enhanced-codes.patch); a stranger waits
// smtp.greetingDelay, in which a client that talks is refused with 421 and cut (a spam bot
// fires its transaction without waiting). Asserted by behaviour, not by timing: a client that
// talks at once is served only when it is not made to wait.
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { senderAuthOff } from "../../src/config/schema.js";
import { startTestDns, type TestDns } from "../helpers/dns-server.js";
import { startTestEmulator, type TestEmulator } from "../helpers/emulator.js";
import { DOMAIN, stopEmulator, withPasswords, withRig } from "./harness.js";

let emu: TestEmulator;
let dns: TestDns;
beforeAll(async () => {
  emu = await startTestEmulator();
  dns = await startTestDns({});
});
afterAll(async () => {
  await dns?.close();
  await stopEmulator(emu);
});

const TRUSTED = ["127.0.0.1/32"];
// Longer than the default 100 ms, so that "talks at once" stays before the greeting even when a
// loaded machine delays the client's first write: the test is about who waits, not how long.
const STRANGER_WAIT_MS = 3000;
const MESSAGE = `From: alice@example.com\r\nSubject: at once\r\nMessage-ID: <at-once.${Date.now()}@t>\r\n\r\nplease fax\r\n.\r\n`;

/**
 * Connects from `localAddress`, writes `script` the moment the connection is up (before any
 * greeting could be read), and collects what the server says until it closes or `until` matches.
 */
async function talkAtOnce(port: number, localAddress: string, script: string, until: RegExp): Promise<string> {
  const socket = net.connect({ port, host: "127.0.0.1", localAddress });
  socket.setEncoding("latin1");
  let text = "";
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", () => {
      socket.write(script);
      resolve();
    });
    socket.once("error", reject);
  });
  await new Promise<void>((resolve) => {
    const done = (): void => {
      socket.off("data", onData);
      resolve();
    };
    const onData = (d: string): void => {
      text += d;
      if (until.test(text)) done();
    };
    socket.on("data", onData);
    socket.once("close", done);
    socket.once("error", done);
  });
  socket.destroy();
  return text;
}

/** read until the server closes the connection */
const UNTIL_CLOSED = /(?!)/;

const codes = (text: string): string[] => text.split("\r\n").filter((l) => /^\d{3} /.test(l));

describe("the greeting", () => {
  it("a trusted relay that talks before the 220 is greeted at once and served: its mail is queued", async () => {
    await withRig(emu, { smtp: { trustedNetworks: TRUSTED } }, async (rig) => {
      const text = await talkAtOnce(
        rig.port,
        "127.0.0.1",
        `EHLO relay.example\r\nMAIL FROM:<alice@example.com>\r\nRCPT TO:<15551234567@${DOMAIN}>\r\nDATA\r\n${MESSAGE}QUIT\r\n`,
        /^221 /m,
      );
      const replies = codes(text);
      expect(replies[0]).toMatch(/^220 /);
      expect(text).not.toMatch(/talk too soon/i);
      expect(replies.find((l) => /queued as/.test(l))).toMatch(/^250 2\.0\.0 queued as /);
      expect(replies.at(-1)).toMatch(/^221 /);
    });
  });

  it("a stranger that talks before the 220 is refused with 421 and cut, never greeted", async () => {
    await withRig(emu, { smtp: { trustedNetworks: TRUSTED, greetingDelay: STRANGER_WAIT_MS } }, async (rig) => {
      const text = await talkAtOnce(
        rig.port,
        "127.0.0.2",
        `EHLO bot.example\r\nMAIL FROM:<alice@example.com>\r\nRCPT TO:<15551234567@${DOMAIN}>\r\nDATA\r\n${MESSAGE}QUIT\r\n`,
        UNTIL_CLOSED,
      );
      expect(codes(text)[0]).toMatch(/^421 .*talk too soon/i);
      expect(text).not.toMatch(/^220 /m);
      expect(text).not.toMatch(/^250 /m);
    });
  });

  it("in MX mode (senderAuth verify) a stranger that talks early is still refused; one that waits is greeted", async () => {
    await withRig(
      emu,
      {
        smtp: {
          trustedNetworks: TRUSTED,
          greetingDelay: STRANGER_WAIT_MS,
          senderAuth: { ...senderAuthOff(), mode: "verify" },
        },
        dns: { servers: [dns.server], timeout: 500 },
      },
      async (rig) => {
        const early = await talkAtOnce(rig.port, "127.0.0.3", "EHLO bot.example\r\nQUIT\r\n", UNTIL_CLOSED);
        expect(codes(early)[0]).toMatch(/^421 .*talk too soon/i);
        expect(early).not.toMatch(/^220 /m);
        // the same client waiting for the greeting, as a real MTA does
        const socket = net.connect({ port: rig.port, host: "127.0.0.1", localAddress: "127.0.0.3" });
        socket.setEncoding("latin1");
        let text = "";
        let greeted = false;
        socket.on("data", (d: string) => {
          text += d;
          if (!greeted && /^220 /m.test(text)) {
            greeted = true;
            socket.write("EHLO mta.example\r\n");
          }
        });
        await new Promise<void>((resolve) => {
          socket.on("data", () => /^250 /m.test(text) && resolve());
          socket.once("close", () => resolve());
        });
        socket.destroy();
        expect(text).toMatch(/^220 /m);
        expect(text).toMatch(/^250[ -]/m);
      },
    );
  });

  it("a listener where AUTH is required greets every client at once: one that talks early is answered, not cut", async () => {
    const users = await withPasswords();
    await withRig(emu, { users, smtp: { trustedNetworks: TRUSTED, auth: "required" } }, async (rig) => {
      const text = await talkAtOnce(rig.port, "127.0.0.4", "EHLO client.example\r\nQUIT\r\n", /^221 /m);
      const replies = codes(text);
      expect(replies[0]).toMatch(/^220 /);
      expect(text).not.toMatch(/talk too soon/i);
      expect(replies.at(-1)).toMatch(/^221 /);
    });
  });
});
