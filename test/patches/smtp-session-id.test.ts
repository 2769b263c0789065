// patches/smtp-server+exact-enhanced-codes.patch's item 7: session ids cut from a block of random
// bytes fetched for 128 sessions at once. Real clients connect to the installed server, both
// builds, over three blocks: every id is the 16 base-32 characters upstream makes, and none
// repeats (an id cut from the wrong place of a block, or a block not renewed, would).
import type { AddressInfo } from "node:net";
import type { SMTPServer, SMTPServerOptions } from "smtp-server";
import * as esm from "smtp-server";
import { describe, expect, it } from "vitest";
import { RawSmtp } from "../helpers/raw-smtp.js";
import { loadInstalled } from "../helpers/unpatched.js";

const cjs = loadInstalled<{ SMTPServer: typeof SMTPServer }>("smtp-server", "dist/cjs/smtp-server.js");

/** Connects, waits for the greeting, says QUIT and waits for the close. */
async function greetAndQuit(port: number): Promise<void> {
  const { client } = await RawSmtp.connect(port);
  await client.cmd("QUIT");
  await client.reply(); // "" once the server has closed
}

async function sessionIds(Server: typeof SMTPServer, sessions: number): Promise<string[]> {
  const ids: string[] = [];
  const options: SMTPServerOptions = {
    logger: false,
    earlyTalkerDelay: 0,
    disableReverseLookup: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    onConnect(session, callback) {
      ids.push(session.id);
      callback();
    },
  };
  const server = new Server(options);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.server.address() as AddressInfo;
  try {
    for (let done = 0; done < sessions; done += 20)
      await Promise.all(Array.from({ length: Math.min(20, sessions - done) }, () => greetAndQuit(port)));
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  return ids;
}

describe("smtp-server session ids from a block of random bytes", () => {
  for (const [build, Server] of [
    ["ESM", esm.SMTPServer],
    ["CommonJS", cjs.SMTPServer],
  ] as const) {
    it(`${build}: 400 sessions, three blocks and more, each its own id in upstream's form`, async () => {
      const ids = await sessionIds(Server, 400);
      expect(ids).toHaveLength(400);
      for (const id of ids) expect(id).toMatch(/^[0-9a-v]{16}$/);
      expect(new Set(ids).size).toBe(400);
    });
  }
});
