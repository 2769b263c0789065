// A deferred child logger (src/log/logger.ts deferredChild) writes the very lines pino's child
// writes, secrets censored and numbers cut by the same paths, whether or not it made the child;
// and the refusals page still sees a refusal's user from the bindings. Driven through the real
// logger into a stream, as the daemon writes.
import { Writable } from "node:stream";
import { expect, it } from "vitest";
import { type Logger, childLog, createLogger, deferredChild } from "../../src/log/logger.js";
import { RefusalLog } from "../../src/web/refusals.js";

/** The lines `write` logs through a fresh logger, each without its time. */
function lines(write: (log: Logger) => void): string[] {
  const out: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      out.push(String(chunk));
      done();
    },
  });
  write(createLogger({ destination: destination as never, level: "info" }));
  return out
    .join("")
    .split("\n")
    .filter(Boolean)
    .map((l) => l.replace(/"time":"[^"]*",/, ""));
}

const SESSION = { session: "s-1", remote: "192.0.2.7", token: "session-secret-1" };
const MAIL = { user: "alice", rcpt: "15551234567@fax.example.com" };
const SEND_ERROR = new Error("send to +15551234567 failed");

/** The same lines, written by a logger `make` gives for the session and then the mail. */
function script(make: (parent: Logger, bindings: Record<string, unknown>) => Logger): (root: Logger) => void {
  return (root) => {
    const session = make(root, SESSION);
    const mail = make(session, MAIL);
    mail.info({ job: "j-1", recipients: 2, to: "+15551230400" }, "QUEUED");
    mail.info("plain %s line", "interpolated");
    mail.warn({ reason: "+15551234567 refused", apiKey: "field-secret-2", nested: { password: "p-3" } }, "FAILED");
    mail.info({ user: "bob", remote: "198.51.100.1" }, "a field named like a binding");
    // the Error last of the mail's own lines: it makes the child, and later lines go through it
    mail.error(SEND_ERROR, "could not send");
    mail.debug({ job: "j-2" }, "below the level");
    session.info({ code: "RELAY_DENIED" }, "REJECTED");
    const job = make(mail, { job: "j-3" });
    job.info({ documents: 1 }, "QUEUED");
    job.child({ attempt: 1 }).info("a child of a deferred child");
  };
}

it("writes the lines pino's child writes, censored the same", () => {
  const real = lines(script(childLog));
  const deferred = lines(script(deferredChild));
  expect(real).toHaveLength(8);
  expect(deferred).toEqual(real);
  const text = deferred.join("\n");
  for (const secret of ["session-secret-1", "field-secret-2", '"p-3"', "15551234567", "15551230400"]) {
    expect(text).not.toContain(secret);
  }
  expect(JSON.parse(deferred[0]!)).toMatchObject({
    session: "s-1",
    token: "[redacted]",
    user: "alice",
    rcpt: "*******4567@fax.example.com",
    job: "j-1",
    to: "+*******0400",
  });
});

it("lets the refusals page see the user a deferred child is bound to", () => {
  const refusals = new RefusalLog();
  lines((root) => {
    const tapped = refusals.tap(root, "smtp");
    deferredChild(deferredChild(tapped, SESSION), { user: "alice" }).info(
      { reply: "550 5.7.1 Relay denied" },
      "REJECTED",
    );
  });
  expect(refusals.recent()).toMatchObject([{ source: "smtp", user: "alice", reason: "550 5.7.1 Relay denied" }]);
});
