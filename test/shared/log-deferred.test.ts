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

it("writes the same lines when deferred children of deferred children share one parent", () => {
  // three levels deferred at once (a session's, a mail's, a job's), then the levels above making
  // their children while those below still defer, and a line's field named like a binding of a
  // level above
  const nested = (make: (parent: Logger, bindings: Record<string, unknown>) => Logger) => (root: Logger) => {
    const session = make(root, SESSION);
    const mail = make(session, MAIL);
    const job = make(mail, { job: "j-4", to: "+15551239999" });
    job.info({ documents: 2 }, "QUEUED");
    job.warn("plain %s", "warning");
    job.info({ user: "carol", token: "field-secret-5" }, "a field named like the mail's binding");
    const later = make(mail, { job: "j-5" });
    session.error(SEND_ERROR, "the session's child made");
    later.info({ documents: 1 }, "QUEUED after the session made its child");
    mail.info({ remote: "198.51.100.2" }, "the mail's own line, a field named like the session's");
    job.info({ documents: 3 }, "QUEUED again");
    // an own "__proto__" (JSON.parse makes one) stays a field, not the line's prototype
    later.info(JSON.parse('{"__proto__":{"documents":9},"pages":4}') as Record<string, unknown>, "__proto__");
    job.child({ attempt: 2 }).info("a child of the merged deferred child");
  };
  const real = lines(nested(childLog));
  const deferred = lines(nested(deferredChild));
  expect(real).toHaveLength(9);
  expect(deferred).toEqual(real);
  const text = deferred.join("\n");
  for (const secret of ["session-secret-1", "field-secret-5", "15551234567", "15551239999"]) {
    expect(text).not.toContain(secret);
  }
  expect(JSON.parse(deferred[0]!)).toMatchObject({ session: "s-1", user: "alice", job: "j-4", documents: 2 });
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
