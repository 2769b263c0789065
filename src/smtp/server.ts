// The e-mail side of the gateway (Postfix smtpd's job): who may send, to which addresses, and
// "250 queued as <id>" only once the job is durably in the store. Conversion lives in ../intake.
import { readFileSync } from "node:fs";
import os from "node:os";
import type { Readable } from "node:stream";
import {
  SMTPServer,
  type SMTPServerAddress,
  type SMTPServerAuthentication,
  type SMTPServerDataStream,
  type SMTPServerSession,
} from "smtp-server";
import type { Clock } from "../clock.js";
import { parseHostPort, type SmtpConfig, type UserConfig } from "../config/index.js";
import { confirmsNewDestinations, type MailDoor, type Vetted, type EnvelopeRecipient } from "../intake/index.js";
import type { DnsResolve } from "../dns/index.js";
import { FaxgateError, describeError, isFaxgateError } from "../errors.js";
import type { FaxApi } from "../fax/index.js";
import { type DestinationCheck, decideRecipient, type RecipientDecision } from "../recipients/index.js";
import type { Ledger } from "../ledger/index.js";
import type { Logger } from "../log/index.js";
import type { Metrics } from "../metrics/index.js";
import { size as formatSize } from "../format.js";
import {
  AuthLockout,
  MAX_CLIENT_AUTH_FAILURES,
  MAX_SESSION_AUTH_FAILURES,
  verifySignIn,
  RateLimiter,
  buildBlockList,
  inList,
  liveUserIndex,
  type UserIndex,
} from "../auth/index.js";
import { SessionTap } from "./session-tap.js";
import { SessionState } from "./session-state.js";
import { checkRecipient, type RecipientTarget } from "./recipient-address.js";
import { authAllowed, decideSender } from "./sender-policy.js";
import { refuse, refuseWith, replyError, replyFor } from "./smtp-reply.js";
import { SenderVerifier, type SenderVerdict } from "./sender-auth/verify-sender.js";
import type { FleetCounters } from "../fleet-counter.js";
import { wantedMail } from "./sender-auth/wanted-mail.js";
import { SessionSlots } from "./session-slots.js";

/** What a gateway is built from: the composition root (parts/smtp.ts) or the test builder hands all of it over. */
export interface SmtpGatewayOptions {
  smtp: SmtpConfig;
  /** The users as they are now (the daemon's live settings), read at each MAIL FROM and AUTH. */
  users: readonly UserConfig[] | (() => readonly UserConfig[]);
  /** who has left the directory: their mail is refused saying so (directory/leavers.ts); AUTH answers as for a wrong password */
  leaver?: (login: string) => string | null;
  clientFor: (user: string) => FaxApi;
  logger: Logger;
  clock: Clock;
  metrics: Metrics;
  /** The one mail door (parts/mail-door.ts), opened and closed by its owner. */
  mail: MailDoor;
  /** The destination policy, with the gateway's rules and each user's own. */
  destinations: DestinationCheck;
  /** The resolver for SPF, DKIM and DMARC (made from dns.servers). */
  resolve: DnsResolve;
  /** A known sender's refused mail is a ledger row with the refusal's code (docs/compliance.md). */
  ledger: Pick<Ledger, "record">;
  /** Where lockouts and rates are counted: the fleet's store on PostgreSQL, this process on SQLite. */
  counters: FleetCounters;
}

const MAX_RATE_STRIKES = 3;

export class SmtpGateway {
  private readonly smtp: SmtpConfig;
  private readonly clientFor: (user: string) => FaxApi;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly metrics: Metrics;
  private readonly mail: MailDoor;
  private readonly trusted;
  private readonly limiter: RateLimiter;
  private readonly clientLimiter: RateLimiter;
  private readonly authDelayMs: number;
  private tls?: { key: Buffer; cert: Buffer };
  private readonly destinations: DestinationCheck;
  private readonly users: () => readonly UserConfig[];
  /** The users by address and login; after a reload, from the next MAIL FROM (open sessions stay up). */
  private readonly index: () => UserIndex;
  private servers: SMTPServer[] = [];
  private readonly tap: SessionTap;
  private readonly sessions = new Map<string, SessionState>();
  private readonly ledger: Pick<Ledger, "record">;
  private readonly slots: SessionSlots;
  private readonly verifier: SenderVerifier;
  private readonly lockout: AuthLockout;
  private readonly inflight = new Set<Promise<unknown>>();
  private closing = false;

  constructor(opts: SmtpGatewayOptions) {
    this.smtp = opts.smtp;
    this.clientFor = opts.clientFor;
    this.log = opts.logger;
    this.clock = opts.clock;
    this.metrics = opts.metrics;
    this.trusted = buildBlockList(opts.smtp.trustedNetworks);
    // counted across the fleet where there is one (opts.counters): N gateways grant one rate
    this.limiter = new RateLimiter(opts.smtp.maxMessagesPerMinute, this.clock, opts.counters, "smtp-user");
    this.clientLimiter = new RateLimiter(
      opts.smtp.maxMessagesPerMinutePerClient,
      this.clock,
      opts.counters,
      "smtp-client",
    );
    this.authDelayMs = opts.smtp.authFailureDelay;
    this.lockout = new AuthLockout(this.clock, opts.counters, "smtp-address");
    this.mail = opts.mail;
    this.ledger = opts.ledger;
    const users = opts.users;
    this.users = typeof users === "function" ? users : () => users;
    this.index = liveUserIndex(this.users, opts.leaver);
    this.destinations = opts.destinations;
    this.tap = new SessionTap(
      { maxJunkCommands: opts.smtp.maxJunkCommands, idleSessionMs: opts.smtp.idleSessionTimeout },
      this.clock,
      (code) => this.metrics.smtpReplies.inc({ code: String(code) }),
    );
    this.slots = new SessionSlots({
      max: opts.smtp.maxConnections,
      reservedTrusted: opts.smtp.reservedTrustedConnections ?? SessionSlots.defaultReserve(opts.smtp.maxConnections),
      perClient: opts.smtp.maxConnectionsPerClient,
    });
    this.verifier = new SenderVerifier(opts.smtp.senderAuth, opts.resolve, opts.smtp.hostname ?? os.hostname());
    this.tls = this.readTls();
  }

  private readTls(): { key: Buffer; cert: Buffer } | undefined {
    if (!this.smtp.tls) return undefined;
    try {
      return { key: readFileSync(this.smtp.tls.key), cert: readFileSync(this.smtp.tls.cert) };
    } catch (err) {
      throw new FaxgateError("CONFIG_INVALID", `smtp.tls: cannot read the certificate or key: ${describeError(err)}`, {
        field: "smtp.tls",
        cause: err,
      });
    }
  }

  /**
   * Reload (SIGHUP): the certificate and key are read again (a renewed certificate), and new
   * STARTTLS sessions use them; open sessions keep theirs. A file that cannot be read leaves the
   * old ones in place (the error says why).
   */
  reloadTls(): void {
    const next = this.readTls();
    if (!next || !this.tls) return;
    for (const server of this.servers) server.updateSecureContext({ key: next.key, cert: next.cert });
    this.tls = next;
    this.log.info({ cert: this.smtp.tls?.cert }, "SMTP TLS certificate reloaded");
  }

  async listen(): Promise<Array<{ host: string; port: number }>> {
    const out: Array<{ host: string; port: number }> = [];
    for (const entry of this.smtp.listen) {
      const { host, port } = parseHostPort(entry, "smtp.listen");
      const server = this.makeServer();
      await new Promise<void>((resolve, reject) => {
        const onError = (err: Error): void =>
          reject(
            new FaxgateError("CONFIG_INVALID", `smtp.listen ${entry}: ${err.message}`, {
              field: "smtp.listen",
              cause: err,
            }),
          );
        // smtp-server re-emits the listening socket's errors (EADDRINUSE...) on itself
        server.once("error", onError);
        server.listen(port, host, () => {
          server.off("error", onError);
          resolve();
        });
      });
      server.on("error", (err: Error) => this.log.warn({ err: err.message }, "smtp connection error"));
      this.servers.push(server);
      const a = server.server.address();
      out.push(typeof a === "object" && a ? { host: a.address, port: a.port } : { host, port });
    }
    this.log.info({ listen: out.map((a) => `${a.host}:${a.port}`) }, "SMTP listening");
    return out;
  }

  /** Stops taking mail: open sessions finish their message, new commands get 421. */
  async close(opts: { timeoutMs?: number } = {}): Promise<void> {
    this.closing = true;
    const timeoutMs = opts.timeoutMs ?? 10_000;
    await Promise.all(
      this.servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.options.closeTimeout = timeoutMs;
            s.close(() => resolve());
          }),
      ),
    );
    // A DATA being converted when its client was cut off still ends in the store (or not) before
    // the store itself is closed by the caller.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.inflight]),
      new Promise((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
    this.servers = [];
  }

  private makeServer(): SMTPServer {
    const disabled = [...(this.smtp.auth === "off" ? ["AUTH"] : []), ...(this.tls ? [] : ["STARTTLS"])];
    const server = new SMTPServer({
      name: this.smtp.hostname ?? os.hostname(),
      banner: "faxgate e-mail to fax gateway",
      // EHLO says "SIZE <limit>" (RFC 1870) so a client knows before it sends; smtp-server then
      // refuses a bigger SIZE= at MAIL FROM itself (552 5.3.4, the limit in bytes), and ours
      // (onMailFrom, DATA) words the rest in MB
      size: this.smtp.maxMessageBytes,
      // Our own check in onConnect answers with an enhanced code; smtp-server's (no enhanced
      // code) only backs it up for connections that have not reached onConnect yet.
      maxClients: this.smtp.maxConnections * 2,
      socketTimeout: this.smtp.socketTimeout,
      closeTimeout: 10_000,
      authMethods: ["PLAIN", "LOGIN"],
      authOptional: true,
      // AUTH is offered per session (TLS or loopback) through session.disabledCommands.
      allowInsecureAuth: true,
      disabledCommands: disabled,
      hideSTARTTLS: !this.tls,
      hideDSN: true,
      // Every reply of ours writes its own enhanced code (550 5.7.1 relay denied), which
      // smtp-server sends as written (patches/smtp-server+exact-enhanced-codes.patch); its own
      // replies get the code it picks.
      hideENHANCEDSTATUSCODES: false,
      // The client's host name is used nowhere; looking it up cost a DNS query per connection
      // and held the greeting up to 1.5 s when the resolver is slow.
      disableReverseLookup: true,
      // No pause of smtp-server's own before onConnect: ours decides when each client is greeted
      // (onConnect), and a client that talks before the greeting is refused all the same
      // (earlyTalkerDelay, patches/smtp-server+exact-enhanced-codes.patch)
      earlyTalkerDelay: 0,
      // replies counted, junk commands bounded, idle sessions ended (session-tap.ts; the same patch)
      onCommand: (command, session, cb) => this.onCommand(command, session, cb),
      onReply: (code, session) => this.tap.reply(this.sessions.get(session.id), code),
      ...(this.tls ? { key: this.tls.key, cert: this.tls.cert } : {}),
      onConnect: (session, cb) => this.onConnect(session, cb),
      onSecure: (_socket, session, cb) => this.onSecure(session, cb),
      onAuth: (auth, session, cb) => void this.onAuth(auth, session, cb),
      onMailFrom: (address, session, cb) =>
        void this.onMailFrom(address, session, cb).catch((err: unknown) => {
          // the fleet's counters are in the store: when it cannot be asked, a temporary refusal
          this.state(session).log.error({ err: describeError(err) }, "MAIL FROM error");
          cb(replyError("451 4.3.0 Temporary local problem, please try again later"));
        }),
      onRcptTo: (address, session, cb) => void this.onRcptTo(address, session, cb),
      onData: (stream, session, cb) => this.onData(stream, session, cb),
      onClose: (session) => this.onClose(session),
    });
    return server;
  }

  private sessionDisabled(session: SMTPServerSession): string[] {
    const off = [...(this.tls && !session.secure ? [] : ["STARTTLS"])];
    if (!authAllowed(this.smtp.auth, session)) off.push("AUTH");
    return off;
  }

  private onConnect(session: SMTPServerSession, cb: (err?: Error | null) => void): void {
    if (this.closing) return cb(replyError("421 4.3.2 The fax gateway is shutting down, try again later"));
    const client = session.remoteAddress ?? "";
    // slots: strangers leave a reserve for trustedNetworks and hold few each (session-slots.ts)
    const trusted = inList(this.trusted, client);
    const admitted = this.slots.admit(client, trusted);
    if (!admitted.ok) {
      const text =
        admitted.why === "per-client"
          ? "Too many connections from your address, try again in a moment"
          : "Too many connections, try again in a moment";
      const st = new SessionState(this.log, session.id, client, trusted, false, this.clock.now());
      return this.reject(cb, st, refuse("CLIENT_LIMIT", text), { sessions: admitted.sessions, why: admitted.why });
    }
    this.sessions.set(session.id, new SessionState(this.log, session.id, client, trusted, true, this.clock.now()));
    this.metrics.smtpSessions.inc();
    session.disabledCommands = this.sessionDisabled(session);
    // smtp-server answers a client that talks before the greeting with 421 and cuts it (a spam bot
    // does not wait for the 220). A stranger waits smtp.greetingDelay for it; our relays, and
    // every client of a listener where AUTH is required, are greeted at once (as Postfix's
    // postscreen greets its permit list, and its submission service does not screen at all).
    const wait = trusted || this.smtp.auth === "required" ? 0 : this.smtp.greetingDelay;
    const greet = (): void => void (wait <= 0 ? cb() : setTimeout(() => cb(), wait).unref());
    // sender-auth hook (issue 37): strangers not yet verified share a few slots before their greeting
    if (trusted) return greet();
    this.verifier.admitStranger(session.id, client, greet);
  }

  private onSecure(session: SMTPServerSession, cb: (err?: Error | null) => void): void {
    session.disabledCommands = this.sessionDisabled({ ...session, secure: true });
    cb();
  }

  private onClose(session: SMTPServerSession): void {
    const st = this.sessions.get(session.id);
    this.sessions.delete(session.id);
    this.verifier.sessionClosed(session.id);
    if (st?.admitted) this.slots.release(st.client, st.trusted);
  }

  /** Each command before smtp-server runs it: a session over its junk allowance or life is cut. */
  private onCommand(command: string, session: SMTPServerSession, cb: (err?: Error | null) => void): void {
    const st = this.sessions.get(session.id);
    const cut = st && this.tap.command(st, command);
    if (!cut) return cb();
    if (cut.why === "idle") st.log.info({ afterMs: this.smtp.idleSessionTimeout }, "session closed: no message");
    else st.log.info({ command }, "session closed: too many junk commands");
    cb(replyError(cut.reply));
  }

  private state(session: SMTPServerSession): SessionState {
    let s = this.sessions.get(session.id);
    if (!s) {
      // a session onConnect did not see (it holds no slot)
      s = new SessionState(this.log, session.id, session.remoteAddress ?? "", false, false, this.clock.now());
      this.sessions.set(session.id, s);
    }
    return s;
  }

  // Nothing the client typed at AUTH is logged (a password typed as the user name would be): the
  // session, the address and the outcome say enough.
  private async onAuth(
    auth: SMTPServerAuthentication,
    session: SMTPServerSession,
    cb: (err: Error | null | undefined, res?: { user: string }) => void,
  ): Promise<void> {
    const st = this.state(session);
    try {
      if (!authAllowed(this.smtp.auth, session)) {
        return this.reject(cb, st, refuse("ENCRYPTION_REQUIRED", "Encryption required: use STARTTLS before AUTH"), {});
      }
      const client = session.remoteAddress ?? "";
      // counted before the check: parallel attempts cannot all get past the limit
      const attempt = await this.lockout.begin(client);
      if (!attempt) {
        // no password check at all: a locked-out guesser costs no scrypt time
        return this.reject(
          cb,
          st,
          refuse("CLIENT_LIMIT", "Too many failed logins from your address, try again later"),
          { why: "address locked out after repeated failures" },
        );
      }
      const user = this.index().byLogin(auth.username ?? "");
      const password = auth.password ?? "";
      const ok = await verifySignIn(password, user?.password);
      if (ok && user) {
        await attempt.succeeded();
        st.log.info({ user: user.name }, "AUTH ok");
        return cb(null, { user: user.name });
      }
      st.authFailures += 1;
      const fromClient = attempt.failed();
      const refusal =
        st.authFailures >= MAX_SESSION_AUTH_FAILURES || fromClient >= MAX_CLIENT_AUTH_FAILURES
          ? refuse("CLIENT_LIMIT", "Too many failed authentication attempts, closing")
          : // A leaver's password can no longer be checked, so saying "has left" here would tell
            // any client which names once belonged to someone: the wire answer stays the same.
            refuse("AUTH_FAILED", "Authentication failed: wrong user name or password");
      // Slow down guessing, then hang up.
      await new Promise((r) => setTimeout(r, this.authDelayMs * st.authFailures));
      const left = !user && this.index().hasLeft(auth.username ?? "");
      return this.reject(cb, st, refusal, {
        failures: st.authFailures,
        fromAddress: fromClient,
        ...(left ? { hasLeft: true } : {}),
      });
    } catch (err) {
      st.log.error({ err: describeError(err) }, "AUTH error");
      cb(replyError("454 4.7.0 Temporary authentication failure"));
    }
  }

  /** Logs a refusal (REJECTED, with the session) and answers it. */
  private reject(
    cb: (err?: Error | null) => void,
    st: SessionState,
    refusal: FaxgateError,
    fields: Record<string, unknown>,
  ): void {
    const reply = replyFor(refusal);
    st.log.info({ ...fields, code: refusal.code, reply }, "REJECTED");
    const user = typeof fields.user === "string" ? fields.user : undefined;
    if (!user) return cb(replyError(reply));
    // the row is written before the answer, as the console's reads are
    void this.recordRefusal(st, user, refusal.code, reply).finally(() => cb(replyError(reply)));
  }

  /**
   * A refusal of a user's mail: the code and the reply's status (never its text). A stranger's
   * claim to be that user is not taken as proof (STYLE habit 20): then the actor is nobody known,
   * the user is only the object, and the door is mx.
   */
  private async recordRefusal(st: SessionState, user: string, code: string, reply: string): Promise<void> {
    try {
      await this.ledger.record({
        action: "refused",
        actor: st.stranger ? { kind: "person" } : { kind: "person", id: user },
        object: { kind: "person", id: user },
        door: st.stranger ? "mx" : "smtp",
        ...(st.client ? { client: st.client } : {}),
        detail: { code, reply: reply.split(" ").slice(0, 2).join(" ") },
      });
    } catch (err) {
      st.log.error({ err: describeError(err) }, "LEDGER the refusal's row was not recorded");
    }
  }

  private async onMailFrom(
    address: SMTPServerAddress,
    session: SMTPServerSession,
    cb: (err?: Error | null) => void,
  ): Promise<void> {
    const st = this.state(session);
    st.user = undefined;
    st.recipients = new Map();
    st.held = new Map();
    const from = address.address ?? "";
    const declared = Number((address.args || undefined)?.SIZE ?? 0);
    if (declared > this.smtp.maxMessageBytes)
      return this.reject(cb, st, tooBig(this.smtp.maxMessageBytes), { from: from.slice(0, 200), size: declared });
    // back-pressure: a full queue is answered before the message is sent (the door asks again at its end)
    const busy = this.mail.busyNow("smtp");
    if (busy) return this.reject(cb, st, busy, { from: from.slice(0, 200) });
    const decision = decideSender(this.index(), {
      address: from,
      authenticatedAs: typeof session.user === "string" ? session.user : undefined,
      trusted: st.trusted,
      // sender-auth hook (issue 37): in verify mode a stranger may go on, and proves its sender at DATA
      provable: this.verifier.verifying,
      authMode: this.smtp.auth,
      authOffered: authAllowed(this.smtp.auth, session),
    });
    if (!decision.ok) return this.reject(cb, st, decision.refusal, { from: from.slice(0, 200) });
    // a stranger (public MX mode) is also held to a rate per address: forged senders rotate names
    const stranger = !st.trusted && typeof session.user !== "string";
    st.stranger = stranger;
    if (stranger && !(await this.clientLimiter.allow(st.client ?? ""))) {
      st.rateStrikes += 1;
      const refusal =
        st.rateStrikes >= MAX_RATE_STRIKES
          ? refuse("CLIENT_LIMIT", "Too many messages from your address, closing; try again later")
          : refuseWith(
              "CLIENT_LIMIT",
              `451 4.7.1 Too many messages from your address: at most ${this.smtp.maxMessagesPerMinutePerClient} per minute, try again later`,
            );
      return this.reject(cb, st, refusal, { from: from.slice(0, 200) });
    }
    // A stranger's claim to be a user is only a claim until the message proves it: the user's
    // rate is spent at DATA, once the sender is verified, so forgeries cannot use it up.
    if (!(stranger && this.verifier.verifying)) {
      const refusal = await this.takeUserRate(st, decision.user.name);
      if (refusal) return this.reject(cb, st, refusal, { from, user: decision.user.name });
    }
    st.user = decision.user;
    if (!stranger || !this.verifier.verifying) return cb();
    // sender-auth hook (issue 37): a verdict that cannot change is given before the body is sent
    const user = decision.user;
    this.verifier
      .precheck({
        envelopeFrom: from,
        remoteAddress: session.remoteAddress ?? "",
        clientHostname: session.hostNameAppearsAs ?? "",
      })
      .then(
        (verdict) => {
          if (!verdict || verdict.ok) return cb();
          st.user = undefined;
          this.metrics.senderVerdicts.inc({ verdict: verdict.temporary ? "temperror" : "fail", check: verdict.check });
          st.log.info({ check: verdict.check, verdict: verdict.detail, user: user.name }, "sender check failed");
          this.reject(cb, st, verdict.refusal, { from: from.slice(0, 200), user: user.name });
        },
        (err: unknown) => {
          // no early verdict: DATA decides
          st.log.warn({ err: describeError(err) }, "sender pre-check error");
          cb();
        },
      );
  }

  private async onRcptTo(
    address: SMTPServerAddress,
    session: SMTPServerSession,
    cb: (err?: Error | null) => void,
  ): Promise<void> {
    const st = this.state(session);
    const user = st.user;
    const rcpt = address.address ?? "";
    try {
      const shown = rcpt.slice(0, 200);
      if (!user) return this.reject(cb, st, refuse("BAD_SEQUENCE", "MAIL FROM first"), { rcpt: shown });
      const key = rcpt.toLowerCase();
      const count = st.recipients.size + st.held.size;
      if (!st.recipients.has(key) && !st.held.has(key) && count >= this.smtp.maxRecipients) {
        return this.reject(
          cb,
          st,
          refuse("TOO_MANY_RECIPIENTS", `Too many recipients: at most ${this.smtp.maxRecipients} per message`),
          { user: user.name, rcpt: shown },
        );
      }
      const check = checkRecipient(rcpt, this.smtp.domains, this.smtp.defaultCountryCode);
      if (!check.ok) return this.reject(cb, st, check.refusal, { user: user.name, rcpt: shown });
      // every well-formed recipient of a stranger gets this same 250: its claimed user's contacts
      // and rules are looked at only once DATA has proved the claim (STYLE habit 20)
      if (this.unproved(st, session)) {
        st.held.set(key, { address: rcpt, target: check.target });
        return cb();
      }
      try {
        st.recipients.set(key, await this.resolveRecipient(user.name, rcpt, check.target, st.log));
      } catch (err) {
        if (!isFaxgateError(err)) throw err;
        return this.reject(cb, st, err, { user: user.name, rcpt: shown });
      }
      cb();
    } catch (err) {
      st.log.error({ rcpt: rcpt.slice(0, 200), err: describeError(err) }, "RCPT error");
      cb(replyError("451 4.3.0 Temporary local problem, please try again later"));
    }
  }

  /** A stranger in the public MX mode: its envelope sender is a claim until DATA proves it. */
  private unproved(st: SessionState, session: SMTPServerSession): boolean {
    return !st.trusted && typeof session.user !== "string" && this.verifier.verifying;
  }

  /**
   * One recipient on `user`'s behalf (a contact of theirs, their destination rules): the envelope
   * entry, or the refusal (553 naming the rule, 451 when the service cannot be asked).
   */
  private async resolveRecipient(
    user: string,
    rcpt: string,
    target: RecipientTarget,
    log: Logger,
  ): Promise<EnvelopeRecipient> {
    let decision: RecipientDecision;
    try {
      decision = await decideRecipient(
        user,
        target.kind === "number" ? { e164: target.e164 } : { contact: target.name },
        {
          destinations: this.destinations,
          defaultCountryCode: this.smtp.defaultCountryCode,
          contacts: () => this.clientFor(user),
        },
      );
    } catch (err) {
      if (isFaxgateError(err) && (err.code === "UNKNOWN_CONTACT" || err.code === "BAD_NUMBER")) throw err;
      log.warn({ user, rcpt: rcpt.slice(0, 200), err: describeError(err) }, "contact lookup failed");
      throw refuseWith(
        "API_NETWORK",
        `451 4.3.0 Cannot look up the contact "${target.kind === "name" ? target.name : ""}" right now (the fax service is unavailable); try again later`,
      );
    }
    if (!decision.ok) {
      // the address was checked before: only the policy refuses here (553, naming the rule)
      throw decision.code === "DESTINATION_REFUSED"
        ? refuse("DESTINATION_REFUSED", `Destination not allowed <${rcpt.slice(0, 80)}>: ${decision.reason}`)
        : refuse("BAD_NUMBER", decision.reason);
    }
    const { number, name } = decision.recipient;
    return { address: rcpt, number, ...(name ? { contactName: name } : {}) };
  }

  /**
   * A stranger's held recipients, once its sender is proved: all of them, in RCPT order, or the
   * whole message refused naming the first that cannot be used (never a fax to fewer than meant).
   */
  private async resolveHeld(
    user: string,
    held: Array<{ address: string; target: RecipientTarget }>,
    log: Logger,
  ): Promise<EnvelopeRecipient[]> {
    const out: EnvelopeRecipient[] = [];
    for (const h of held) {
      try {
        out.push(await this.resolveRecipient(user, h.address, h.target, log));
      } catch (err) {
        if (!isFaxgateError(err)) throw err;
        const m = /^(\d{3}) (\d\.\d{1,3}\.\d{1,3}) (.*)$/s.exec(replyFor(err));
        if (!m) throw err;
        const nothing = m[1]!.startsWith("4") ? "nothing was faxed" : "the message was not faxed to anyone";
        throw refuseWith(err.code, `${m[1]} ${m[2]} Recipient <${h.address.slice(0, 80)}>: ${m[3]}; ${nothing}`);
      }
    }
    return out;
  }

  private onData(
    stream: SMTPServerDataStream,
    session: SMTPServerSession,
    cb: (err?: Error | null, message?: string) => void,
  ): void {
    const st = this.state(session);
    const work = this.handleData(stream, session).then(
      (message) => {
        // a message accepted: the session's life and junk allowance start again
        this.tap.accepted(st);
        cb(null, message);
      },
      (err: unknown) => {
        const log = st.log;
        // Whatever happened, the client's bytes must be drained or the session stalls.
        stream.resume();
        const reply = replyFor(err);
        if (reply.startsWith("5") && isFaxgateError(err)) log.info({ code: err.code, reply }, "REJECTED");
        else log.warn({ err: describeError(err), reply }, "DATA not accepted");
        if (!st.user || !isFaxgateError(err)) return cb(replyError(reply));
        void this.recordRefusal(st, st.user.name, err.code, reply).finally(() => cb(replyError(reply)));
      },
    );
    this.inflight.add(work);
    void work.finally(() => this.inflight.delete(work));
  }

  private async handleData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    const st = this.state(session);
    const user = st.user;
    if (!user) {
      stream.resume();
      throw refuse("BAD_SEQUENCE", "MAIL FROM first");
    }
    const envelopeFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : "";
    const recipients = session.envelope.rcptTo
      .map((r) => st.recipients.get(r.address.toLowerCase()))
      .filter((r): r is EnvelopeRecipient => r !== undefined);
    const held = session.envelope.rcptTo
      .map((r) => st.held.get(r.address.toLowerCase()))
      .filter((r): r is NonNullable<typeof r> => r !== undefined);
    const log = st.mailLog(user.name);
    // the one door into intake; the sender-auth hook (issue 37) judges the whole message before
    // any job, document or conversion exists
    // a stranger's numbers are the sender's only when a signature proves them (issue 48)
    const stranger = !st.trusted && typeof session.user !== "string" && this.verifier.verifying;
    const confirmNew =
      stranger &&
      confirmsNewDestinations(this.smtp.senderAuth, user, envelopeFrom.slice(envelopeFrom.lastIndexOf("@") + 1));
    const { job } = await this.mail.accept(
      {
        user: user.name,
        from: envelopeFrom,
        recipients,
        bodyMode: user.mailBody ?? this.smtp.body,
        ...(confirmNew ? { confirmNewDestinations: true } : {}),
      },
      stream,
      {
        log,
        // every address it asked for, resolved or held: the signed To/Cc must name each
        vet: (message) => this.senderVerdict(st, session, envelopeFrom, [...recipients, ...held], message, log),
        // a stranger's recipients are decided only now that vet has proved its user
        ...(held.length > 0
          ? { recipients: async () => [...recipients, ...(await this.resolveHeld(user.name, held, log))] }
          : {}),
      },
    );
    return `2.0.0 queued as ${job.id}`;
  }

  /** The user's message rate: undefined when a message may go on, else the refusal to answer. */
  private async takeUserRate(st: SessionState, user: string): Promise<FaxgateError | undefined> {
    if (await this.limiter.allow(user)) return undefined;
    st.rateStrikes += 1;
    return st.rateStrikes >= MAX_RATE_STRIKES
      ? refuse("CLIENT_LIMIT", `Too many messages from ${user}, closing; try again later`)
      : refuseWith(
          "CLIENT_LIMIT",
          `451 4.7.1 Too many messages from ${user}: at most ${this.smtp.maxMessagesPerMinute} per minute, try again later`,
        );
  }

  /**
   * smtp.senderAuth's verdict on a received message (sender-auth/verify-sender.ts): thrown as the
   * refusal when it fails, logged and counted either way. Mail from AUTH, and from trustedNetworks
   * when no relay check is on, passes without a look. Answers what proved the sender and, for a
   * stranger's mail, what proves its fax wanted (wanted-mail.ts), for the door and the job.
   */
  private async senderVerdict(
    st: SessionState,
    session: SMTPServerSession,
    envelopeFrom: string,
    recipients: ReadonlyArray<{ address: string }>,
    message: () => Readable | Buffer,
    log: Logger,
  ): Promise<Vetted | undefined> {
    const via = typeof session.user === "string" ? "auth" : st.trusted ? "trusted" : "stranger";
    let verdict: SenderVerdict;
    try {
      verdict = await this.verifier.verify({
        envelopeFrom,
        remoteAddress: session.remoteAddress ?? "",
        clientHostname: session.hostNameAppearsAs ?? "",
        via,
        message,
      });
    } catch (err) {
      log.warn({ err: describeError(err) }, "sender check error");
      throw refuseWith(
        "SENDER_CHECK_TEMPORARY",
        "451 4.7.0 The sender could not be checked right now, try again later",
      );
    }
    if (verdict.ok && (verdict.check === "auth" || verdict.check === "trusted")) return undefined;
    this.metrics.senderVerdicts.inc({
      verdict: verdict.ok ? "pass" : verdict.temporary ? "temperror" : "fail",
      check: verdict.check,
    });
    if (verdict.ok) {
      log.info({ check: verdict.check, verdict: verdict.detail }, "sender verified");
      const senderCheck = verdict.detail.split(";")[0]!;
      if (via !== "stranger" || !this.verifier.verifying || !verdict.signed) return { senderCheck };
      // a proved sender is not yet a wanted fax: a copy, an old mail, a number not written in it
      const wanted = wantedMail(verdict.signed, { from: envelopeFrom, recipients }, this.smtp, this.clock.now());
      // a stranger's mail spends its user's rate only now that it proved to be theirs
      const refusal = st.user ? await this.takeUserRate(st, st.user.name) : undefined;
      if (refusal) throw refusal;
      return { senderCheck, ...wanted };
    }
    // the 5xx is logged as REJECTED (and listed in the console) with its reply by onData; a DNS
    // failure's 451 is listed here, as the refusal it is for now
    if (verdict.temporary)
      log.info(
        { check: verdict.check, verdict: verdict.detail, reply: replyFor(verdict.refusal) },
        "REJECTED sender not checked",
      );
    else log.info({ check: verdict.check, verdict: verdict.detail }, "sender check failed");
    throw verdict.refusal;
  }
}

/** 552 5.3.4 for a mail over the limit, declared at MAIL FROM (SIZE=) or found during DATA. */
function tooBig(limit: number) {
  return refuse("TOO_LARGE", `Message too big: the limit is ${formatSize(limit)}; send fewer or smaller attachments`);
}
