// Back-pressure (issue 55 item 3): once queue.maxWaiting faxes wait to be sent, every door answers
// "busy, try again" instead of taking more, and takes mail again once the queue drains. Faxes stay
// waiting here because the emulator takes ten minutes to finish the first one, and one number
// gets one fax at a time (queue.perNumberConcurrency): the rest wait in the queue, as in a backlog.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, parsePrometheus, waitUntil } from "../helpers/cli.js";
import { startDaemon, type TestDaemon } from "../helpers/gateway.js";
import { converse } from "../helpers/raw-smtp.js";
import { consoleGateway, PASSWORDS, signIn } from "../web/rig.js";

const TO = "15551230001@fax.example.com";
const MAX = 2;
let d: TestDaemon;

const mail = (n: number): string =>
  `From: alice@example.com\r\nTo: ${TO}\r\nSubject: backlog ${n}\r\n\r\nPlease see page ${n}.\r\n`;

/** MAIL FROM's reply, without sending anything (RCPT, then QUIT). */
async function mailFromReply(port: number): Promise<string> {
  const replies = await converse(port, "alice@example.com", [TO], null);
  return replies[2] ?? "";
}

/** The ids of the jobs waiting to be sent, as `faxgate jobs` lists them. */
async function queuedIds(): Promise<string[]> {
  const r = await runCli(["jobs", "--config", d.configFile, "--json", "--state", "queued"]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as Array<{ id: string }>).map((j) => j.id);
}

const waiting = async (): Promise<number> => (await queuedIds()).length;

beforeAll(async () => {
  const spec = consoleGateway({
    delayMs: 600_000,
    config: { queue: { maxWaiting: MAX }, admin: { listen: "127.0.0.1:0" } },
  });
  d = await startDaemon({ ...spec, config: spec.config, name: "busy" });
});
afterAll(() => d?.stop());

describe("a full queue", () => {
  it("is answered 451 4.3.2 at MAIL FROM, 503 with Retry-After in the console and busy by faxgate send; mail is taken again once it drains", async () => {
    const port = d.addresses.smtp[0]!.port;
    const web = `http://127.0.0.1:${d.addresses.web!.port}`;
    // mail until the gateway says busy with the queue really full: each one accepted waits behind
    // the first (one fax per number). Between two reads of the store the gateway also counts what
    // it took since, so it may say busy a moment early; the next read lets the next mail in.
    let accepted = 0;
    let refusal = "";
    await waitUntil(
      async () => {
        const replies = await converse(port, "alice@example.com", [TO], mail(accepted + 1));
        if ((replies.at(-2) ?? "").startsWith("250")) accepted += 1;
        refusal = replies.find((r) => r.startsWith("451")) ?? "";
        return refusal !== "" && (await waiting()) >= MAX;
      },
      "a busy answer with the queue full",
      60_000,
      50,
    );
    // refused at MAIL FROM, before the message was sent, with the back-pressure code
    expect(refusal).toMatch(/^451 4\.3\.2 The fax gateway is busy: too many faxes waiting to be sent/);
    expect(await mailFromReply(port)).toMatch(/^451 4\.3\.2 /);
    expect(await waiting()).toBeGreaterThanOrEqual(MAX);
    expect(accepted).toBeGreaterThanOrEqual(MAX);

    // the console: 503 with when to come back
    const s = await signIn(web, "alice", PASSWORDS.alice);
    const fd = new FormData();
    fd.append("to", "+15551230002");
    fd.append("cover", "on");
    fd.append("subject", "busy?");
    fd.append("notes", "Is the queue full?");
    const r = await fetch(`${web}/api/faxes`, {
      method: "POST",
      headers: { cookie: s.cookie, "x-csrf-token": s.csrf },
      body: fd,
    });
    expect(r.status, await r.clone().text()).toBe(503);
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(((await r.json()) as { code: string }).code).toBe("QUEUE_FULL");

    // faxgate send: the same refusal, nothing queued
    const before = await waiting();
    const cli = await runCli([
      "send",
      "--config",
      d.configFile,
      "--user",
      "alice",
      "--to",
      "+15551230003",
      "--cover",
      "--subject",
      "busy?",
    ]);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(/fax queue is full/);
    expect(await waiting()).toBe(before);

    // seen in the metrics, by door
    const metrics = parsePrometheus(await (await fetch(`http://127.0.0.1:${d.addresses.admin!.port}/metrics`)).text());
    expect(metrics.get('faxgate_busy_refusals_total{door="smtp",why="queue"}')).toBeGreaterThanOrEqual(1);

    // nothing accepted was dropped: the operator cancels the backlog, and mail is taken again
    const ids = await queuedIds();
    expect(ids.length).toBe(before);
    for (const id of ids) expect((await runCli(["cancel", id, "--config", d.configFile])).code).toBe(0);
    await waitUntil(async () => (await mailFromReply(port)).startsWith("250"), "mail taken again", 30_000, 100);
    const replies = await converse(port, "alice@example.com", [TO], mail(99));
    expect(replies.at(-2)).toMatch(/^250 /);
  }, 180_000); // seven CLI runs, each a Node start: minutes on two busy cores
});
