// The e-mail side of the gateway (Postfix smtpd's job): who may send, to which addresses, and
// "250 queued as <id>" only once the job is durably in the store. Conversion lives in ../intake.
import { readFileSync, promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SMTPServerAddress, SMTPServerAuthentication, SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import { systemClock, type Clock } from '../clock.js';
import { parseHostPort } from '../config/host-port.js';
import type { SmtpConfig, UserConfig } from '../config/schema.js';
import { FaxgateError, describeError, isFaxgateError } from '../errors.js';
import type { FaxApi } from '../fax/types.js';
import type { UserDirectory } from '../fax/user-directory.js';
import { resolveContact } from '../intake/contact-lookup.js';
import { makeWorkDir, writeIncoming } from '../intake/incoming-file.js';
import type { ParsedMail } from '../intake/mail-parse.js';
import { mailToJob, type EnvelopeRecipient } from '../intake/mail-to-job.js';
import { OfficeConverter } from '../intake/office-convert.js';
import type { Logger } from '../log/logger.js';
import type { Metrics } from '../metrics/metrics.js';
import type { QueueStore } from '../store/types.js';
import { inProcessReaders, ReadTimeoutError, type InputReaders } from '../workers/pool.js';
import { ExactReplyServer } from './exact-reply-server.js';
import { verifyPassword } from './password.js';
import { RateLimiter } from './rate-limit.js';
import { checkRecipient } from './recipient-address.js';
import { authAllowed, buildBlockList, decideSender, inList, UserIndex } from './sender-policy.js';
import { replyError, replyFor } from './smtp-reply.js';

export interface SmtpGatewayOptions {
  smtp: SmtpConfig;
  users: UserConfig[];
  dataDir: string;
  store: QueueStore;
  clientFor: (user: string) => FaxApi;
  directory: UserDirectory;
  logger: Logger;
  clock?: Clock;
  metrics?: Metrics;
  /** Wait this long times the failure count after a failed AUTH (default 1000 ms). */
  authFailureDelayMs?: number;
  /** Where mail is parsed: the daemon's worker threads (default: on this thread). */
  readers?: InputReaders;
  /** Converts office attachments to PDF (default: LibreOffice from PATH with the default limits). */
  office?: OfficeConverter;
}

interface SessionState {
  user?: UserConfig;
  recipients: Map<string, EnvelopeRecipient>;
  rateStrikes: number;
  authFailures: number;
  /** the client address this session counts against (set once it is admitted) */
  client?: string;
}

const MAX_AUTH_FAILURES = 3;
// Failed logins from one address, over all its sessions, before AUTH is refused outright for
// the rest of the window: guessing over many parallel or successive sessions is bounded too.
const MAX_CLIENT_AUTH_FAILURES = 10;
const CLIENT_AUTH_WINDOW_MS = 15 * 60_000;
const MAX_TRACKED_CLIENTS = 10_000;
const MAX_RATE_STRIKES = 3;
// Verified when the login is unknown, so that unknown and known users take the same time.
const DUMMY_HASH = 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=';

function isSystemError(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' && /^E[A-Z]+$/.test(code) && !code.startsWith('ERR_');
}

export class SmtpGateway {
  private readonly smtp: SmtpConfig;
  private readonly store: QueueStore;
  private readonly clientFor: (user: string) => FaxApi;
  private readonly directory: UserDirectory;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly metrics?: Metrics;
  private readonly incomingDir: string;
  private readonly trusted;
  private readonly limiter: RateLimiter;
  private readonly authDelayMs: number;
  private readonly readers: InputReaders;
  private readonly office: OfficeConverter;
  private readonly ownsOffice: boolean;
  private readonly tls?: { key: Buffer; cert: Buffer };
  private index: UserIndex;
  private servers: ExactReplyServer[] = [];
  private readonly sessions = new Map<string, SessionState>();
  private readonly perClient = new Map<string, number>();
  private readonly authFailuresByClient = new Map<string, { count: number; since: number }>();
  private readonly inflight = new Set<Promise<unknown>>();
  private closing = false;

  constructor(opts: SmtpGatewayOptions) {
    this.smtp = opts.smtp;
    this.store = opts.store;
    this.clientFor = opts.clientFor;
    this.directory = opts.directory;
    this.log = opts.logger;
    this.clock = opts.clock ?? systemClock;
    this.metrics = opts.metrics;
    this.incomingDir = path.join(opts.dataDir, 'incoming');
    this.trusted = buildBlockList(opts.smtp.trustedNetworks);
    this.limiter = new RateLimiter(opts.smtp.maxMessagesPerMinute, this.clock);
    this.authDelayMs = opts.authFailureDelayMs ?? 1000;
    this.readers = opts.readers ?? inProcessReaders;
    this.office = opts.office ?? new OfficeConverter();
    this.ownsOffice = opts.office === undefined;
    this.index = new UserIndex(opts.users);
    if (opts.smtp.tls) {
      try {
        this.tls = { key: readFileSync(opts.smtp.tls.key), cert: readFileSync(opts.smtp.tls.cert) };
      } catch (err) {
        throw new FaxgateError('CONFIG_INVALID', `smtp.tls: cannot read the certificate or key: ${describeError(err)}`, { field: 'smtp.tls', cause: err });
      }
    }
  }

  /** Reload (SIGHUP): new users apply from the next MAIL FROM; open sessions stay up. */
  updateUsers(users: UserConfig[]): void {
    this.index = new UserIndex(users);
  }

  async listen(): Promise<Array<{ host: string; port: number }>> {
    await fsp.mkdir(this.incomingDir, { recursive: true, mode: 0o750 });
    await this.removeStaleIncoming();
    const out: Array<{ host: string; port: number }> = [];
    for (const entry of this.smtp.listen) {
      const { host, port } = parseHostPort(entry, 'smtp.listen');
      const server = this.makeServer();
      await new Promise<void>((resolve, reject) => {
        const onError = (err: Error): void => reject(new FaxgateError('CONFIG_INVALID', `smtp.listen ${entry}: ${err.message}`, { field: 'smtp.listen', cause: err }));
        // smtp-server re-emits the listening socket's errors (EADDRINUSE...) on itself
        server.once('error', onError);
        server.listen(port, host, () => {
          server.off('error', onError);
          resolve();
        });
      });
      server.on('error', (err: Error) => this.log.warn({ err: err.message }, 'smtp connection error'));
      this.servers.push(server);
      const a = server.server.address();
      out.push(typeof a === 'object' && a ? { host: a.address, port: a.port } : { host, port });
    }
    this.log.info({ listen: out.map((a) => `${a.host}:${a.port}`) }, 'SMTP listening');
    return out;
  }

  /** Work folders left by a crash mid-message: the client was never told 250, so it will resend. */
  private async removeStaleIncoming(): Promise<void> {
    const cutoff = this.clock.now() - 60 * 60_000;
    for (const name of await fsp.readdir(this.incomingDir).catch(() => [] as string[])) {
      const p = path.join(this.incomingDir, name);
      const st = await fsp.stat(p).catch(() => null);
      if (st && st.mtimeMs < cutoff) await fsp.rm(p, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  /** Stops taking mail: open sessions finish their message, new commands get 421. */
  async close(opts: { timeoutMs?: number } = {}): Promise<void> {
    this.closing = true;
    const timeoutMs = opts.timeoutMs ?? 10_000;
    await Promise.all(
      this.servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            (s as unknown as { options: { closeTimeout: number } }).options.closeTimeout = timeoutMs;
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
    if (this.ownsOffice) await this.office.close();
  }

  private makeServer(): ExactReplyServer {
    const disabled = [...(this.smtp.auth === 'off' ? ['AUTH'] : []), ...(this.tls ? [] : ['STARTTLS'])];
    return new ExactReplyServer(
      {
        name: this.smtp.hostname ?? os.hostname(),
        banner: 'faxgate e-mail to fax gateway',
        size: this.smtp.maxMessageBytes,
        // Our own check in onConnect answers with an enhanced code; smtp-server's (no enhanced
        // code) only backs it up for connections that have not reached onConnect yet.
        maxClients: this.smtp.maxConnections * 2,
        socketTimeout: this.smtp.socketTimeoutMs,
        closeTimeout: 10_000,
        authMethods: ['PLAIN', 'LOGIN'],
        authOptional: true,
        // AUTH is offered per session (TLS or loopback) through session.disabledCommands.
        allowInsecureAuth: true,
        disabledCommands: disabled,
        hideSTARTTLS: !this.tls,
        hideDSN: true,
        hideENHANCEDSTATUSCODES: false,
        logger: false,
        ...(this.tls ? { key: this.tls.key, cert: this.tls.cert } : {}),
        onConnect: (session, cb) => this.onConnect(session, cb),
        onSecure: (_socket, session, cb) => this.onSecure(session, cb),
        onAuth: (auth, session, cb) => void this.onAuth(auth, session, cb),
        onMailFrom: (address, session, cb) => this.onMailFrom(address, session, cb),
        onRcptTo: (address, session, cb) => void this.onRcptTo(address, session, cb),
        onData: (stream, session, cb) => this.onData(stream, session, cb),
        onClose: (session) => this.onClose(session),
      },
      (code, context) => this.countReply(code, context),
      { maxJunkCommands: this.smtp.maxJunkCommands },
    );
  }

  private countReply(code: number, context: unknown): void {
    if (!this.metrics) return;
    if (code >= 400 || context === 'MAIL_FROM_OK' || context === 'RCPT_TO_OK' || context === 'DATA_OK') {
      this.metrics.smtpReplies.inc({ code: String(code) });
    }
  }

  private sessionDisabled(session: SMTPServerSession): string[] {
    const off = [...(this.tls && !session.secure ? [] : ['STARTTLS'])];
    if (!authAllowed(this.smtp.auth, session)) off.push('AUTH');
    return off;
  }

  private onConnect(session: SMTPServerSession, cb: (err?: Error | null) => void): void {
    if (this.closing) return cb(replyError('421 4.3.2 The fax gateway is shutting down, try again later'));
    if (this.sessions.size >= this.smtp.maxConnections) {
      return cb(replyError('421 4.7.0 Too many connections, try again in a moment'));
    }
    const client = session.remoteAddress ?? '';
    const fromClient = this.perClient.get(client) ?? 0;
    if (fromClient >= this.smtp.maxConnectionsPerClient) {
      this.log.warn({ remote: client, sessions: fromClient }, 'REJECTED connection: too many from one address');
      return cb(replyError('421 4.7.0 Too many connections from your address, try again in a moment'));
    }
    this.perClient.set(client, fromClient + 1);
    this.sessions.set(session.id, { recipients: new Map(), rateStrikes: 0, authFailures: 0, client });
    this.metrics?.smtpSessions.inc();
    session.disabledCommands = this.sessionDisabled(session);
    cb();
  }

  private onSecure(session: SMTPServerSession, cb: (err?: Error | null) => void): void {
    session.disabledCommands = this.sessionDisabled({ ...session, secure: true });
    cb();
  }

  private onClose(session: SMTPServerSession): void {
    const st = this.sessions.get(session.id);
    this.sessions.delete(session.id);
    if (st?.client !== undefined) {
      const left = (this.perClient.get(st.client) ?? 1) - 1;
      if (left > 0) this.perClient.set(st.client, left);
      else this.perClient.delete(st.client);
    }
  }

  /** Failed logins from this address within the window (expired entries are dropped). */
  private clientAuthFailures(client: string): { count: number; since: number } | undefined {
    const entry = this.authFailuresByClient.get(client);
    if (entry && this.clock.now() - entry.since > CLIENT_AUTH_WINDOW_MS) {
      this.authFailuresByClient.delete(client);
      return undefined;
    }
    return entry;
  }

  private noteAuthFailure(client: string): number {
    const entry = this.clientAuthFailures(client) ?? { count: 0, since: this.clock.now() };
    entry.count += 1;
    this.authFailuresByClient.delete(client);
    this.authFailuresByClient.set(client, entry);
    // bounded memory under a spread-out attack: the oldest addresses are forgotten first
    while (this.authFailuresByClient.size > MAX_TRACKED_CLIENTS) {
      this.authFailuresByClient.delete(this.authFailuresByClient.keys().next().value!);
    }
    return entry.count;
  }

  private state(session: SMTPServerSession): SessionState {
    let s = this.sessions.get(session.id);
    if (!s) {
      s = { recipients: new Map(), rateStrikes: 0, authFailures: 0 };
      this.sessions.set(session.id, s);
    }
    return s;
  }

  private async onAuth(auth: SMTPServerAuthentication, session: SMTPServerSession, cb: (err: Error | null | undefined, res?: { user: string }) => void): Promise<void> {
    try {
      if (!authAllowed(this.smtp.auth, session)) {
        return cb(replyError('538 5.7.11 Encryption required: use STARTTLS before AUTH'));
      }
      const st = this.state(session);
      const client = session.remoteAddress ?? '';
      if ((this.clientAuthFailures(client)?.count ?? 0) >= MAX_CLIENT_AUTH_FAILURES) {
        // no password check at all: a locked-out guesser costs no scrypt time
        this.log.warn({ login: (auth.username ?? '').slice(0, 80), remote: client }, 'REJECTED AUTH: address locked out after repeated failures');
        return cb(replyError('421 4.7.0 Too many failed logins from your address, try again later'));
      }
      const user = this.index.byLogin(auth.username ?? '');
      const password = auth.password ?? '';
      const ok = user?.password ? await verifyPassword(password, user.password) : (await verifyPassword(password, DUMMY_HASH), false);
      if (ok && user) {
        this.log.info({ user: user.name, remote: session.remoteAddress }, 'AUTH ok');
        return cb(null, { user: user.name });
      }
      st.authFailures += 1;
      const fromClient = this.noteAuthFailure(client);
      this.log.warn({ login: (auth.username ?? '').slice(0, 80), remote: client, failures: st.authFailures, fromAddress: fromClient }, 'REJECTED AUTH');
      // Slow down guessing, then hang up.
      await new Promise((r) => setTimeout(r, this.authDelayMs * st.authFailures));
      if (st.authFailures >= MAX_AUTH_FAILURES || fromClient >= MAX_CLIENT_AUTH_FAILURES) return cb(replyError('421 4.7.0 Too many failed authentication attempts, closing'));
      return cb(replyError('535 5.7.8 Authentication failed: wrong user name or password'));
    } catch (err) {
      this.log.error({ err: describeError(err) }, 'AUTH error');
      cb(replyError('454 4.7.0 Temporary authentication failure'));
    }
  }

  private reject(cb: (err?: Error | null) => void, reply: string, fields: Record<string, unknown>): void {
    this.log.info({ ...fields, reply }, 'REJECTED');
    cb(replyError(reply));
  }

  private onMailFrom(address: SMTPServerAddress, session: SMTPServerSession, cb: (err?: Error | null) => void): void {
    const st = this.state(session);
    st.user = undefined;
    st.recipients = new Map();
    const from = address.address ?? '';
    const decision = decideSender(this.index, {
      address: from,
      authenticatedAs: typeof session.user === 'string' ? session.user : undefined,
      trusted: inList(this.trusted, session.remoteAddress),
      authMode: this.smtp.auth,
      authOffered: authAllowed(this.smtp.auth, session),
    });
    if (!decision.ok) return this.reject(cb, decision.reply, { from, remote: session.remoteAddress });
    if (!this.limiter.take(decision.user.name)) {
      st.rateStrikes += 1;
      const reply = st.rateStrikes >= MAX_RATE_STRIKES
        ? `421 4.7.0 Too many messages from ${decision.user.name}, closing; try again later`
        : `451 4.7.1 Too many messages from ${decision.user.name}: at most ${this.smtp.maxMessagesPerMinute} per minute, try again later`;
      return this.reject(cb, reply, { from, user: decision.user.name });
    }
    st.user = decision.user;
    cb();
  }

  private async onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, cb: (err?: Error | null) => void): Promise<void> {
    const st = this.state(session);
    const user = st.user;
    const rcpt = address.address ?? '';
    try {
      if (!user) return this.reject(cb, '503 5.5.1 MAIL FROM first', { rcpt });
      const key = rcpt.toLowerCase();
      if (!st.recipients.has(key) && st.recipients.size >= this.smtp.maxRecipients) {
        return this.reject(cb, `452 4.5.3 Too many recipients: at most ${this.smtp.maxRecipients} per message`, { user: user.name, rcpt });
      }
      const check = checkRecipient(rcpt, this.smtp.domains, this.smtp.defaultCountryCode);
      if (!check.ok) return this.reject(cb, check.reply, { user: user.name, rcpt });
      if (check.target.kind === 'number') {
        st.recipients.set(key, { address: rcpt, number: check.target.e164 });
        return cb();
      }
      let contact;
      try {
        contact = await resolveContact(this.clientFor(user.name), check.target.name, this.smtp.defaultCountryCode);
      } catch (err) {
        if (isFaxgateError(err) && err.smtpReply && (err.code === 'UNKNOWN_CONTACT' || err.code === 'BAD_NUMBER')) {
          return this.reject(cb, err.smtpReply, { user: user.name, rcpt });
        }
        this.log.warn({ user: user.name, rcpt, err: describeError(err) }, 'contact lookup failed');
        return this.reject(cb, `451 4.3.0 Cannot look up the contact "${check.target.name}" right now (the fax service is unavailable); try again later`, { user: user.name, rcpt });
      }
      st.recipients.set(key, { address: rcpt, number: contact.e164, contactName: contact.name });
      cb();
    } catch (err) {
      this.log.error({ rcpt, err: describeError(err) }, 'RCPT error');
      cb(replyError('451 4.3.0 Temporary local problem, please try again later'));
    }
  }

  private onData(stream: SMTPServerDataStream, session: SMTPServerSession, cb: (err?: Error | null, message?: string) => void): void {
    const work = this.handleData(stream, session).then(
      (message) => cb(null, message),
      (err: unknown) => {
        // Whatever happened, the client's bytes must be drained or the session stalls.
        stream.resume();
        const reply = err instanceof Error && 'responseCode' in err ? `${(err as { responseCode: number }).responseCode} ${err.message}` : replyFor(err);
        if (!reply.startsWith('5') || !isFaxgateError(err)) this.log.warn({ err: describeError(err), reply }, 'DATA not accepted');
        cb(replyError(reply));
      },
    );
    this.inflight.add(work);
    void work.finally(() => this.inflight.delete(work));
  }

  private async handleData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    const st = this.state(session);
    const user = st.user;
    if (!user) throw replyError('503 5.5.1 MAIL FROM first');
    const envelopeFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
    const recipients = session.envelope.rcptTo
      .map((r) => st.recipients.get(r.address.toLowerCase()))
      .filter((r): r is EnvelopeRecipient => r !== undefined);
    const log = this.log.child({ user: user.name });

    const workDir = await makeWorkDir(this.incomingDir).catch((err: unknown) => {
      stream.resume();
      throw new FaxgateError('STORE_UNAVAILABLE', `cannot write to ${this.incomingDir}: ${describeError(err)}`, { cause: err, temporary: true });
    });
    try {
      const messageFile = path.join(workDir, 'message.eml');
      const incoming = await writeIncoming(stream, messageFile, this.smtp.maxMessageBytes);
      if (incoming.sizeExceeded) {
        throw replyError(`552 5.3.4 Message too big: the limit is ${this.smtp.maxMessageBytes} bytes`);
      }
      if (recipients.length === 0) throw replyError('554 5.5.1 No valid recipients');

      let parsed: ParsedMail;
      try {
        parsed = await this.readers.parseMail(messageFile, workDir);
      } catch (err) {
        // our own trouble (a disk error, the reader threads shutting down): the client retries
        if (isSystemError(err) || isFaxgateError(err)) throw err;
        // The message's own fault: kept for inspection, and the sender is told plainly.
        const timedOut = err instanceof ReadTimeoutError;
        const reason = timedOut
          ? `the message could not be read: ${err.message} (too complex)`
          : `the message could not be read (broken MIME): ${describeError(err).slice(0, 200)}`;
        const job = await this.store.enqueueCorrupt({
          source: 'smtp', user: user.name, reason,
          original: { path: messageFile, name: 'message.eml', contentType: 'message/rfc822', move: true },
          meta: { origin: { envelopeFrom } },
        });
        log.warn({ job: job.id, reason }, 'REJECTED');
        throw replyError(timedOut
          ? `554 5.6.0 The message could not be read: it is too complex (${err.message}); kept as ${job.id}`
          : `554 5.6.0 The message could not be read (broken MIME structure); kept as ${job.id}`);
      }

      const me = this.directory.get(user.name);
      me.catch(() => undefined);
      const coverPreference = await me.then((u) => u.emailToFaxCoverPageOption === true, (err: unknown) => {
        log.warn({ err: describeError(err) }, 'cover page preference unknown, taking it as off');
        return null;
      });
      const job = await mailToJob({
        parsed,
        user: user.name,
        envelopeFrom,
        recipients,
        coverPreference,
        timezone: () =>
          me.then(
            (u) => u.account?.timezone || 'UTC',
            (err: unknown) => {
              throw new FaxgateError('API_NETWORK', `the account time zone is unknown: ${describeError(err)}`, { temporary: true, cause: err });
            },
          ),
        fallbackSenderName: await me.then((u) => [u.firstName, u.lastName].filter(Boolean).join(' ') || undefined, () => undefined),
        inlineImageMinBytes: this.smtp.inlineImageMinBytes,
        original: { path: messageFile, sha256: incoming.sha256 },
        now: this.clock.now(),
        office: this.office,
        bodyMode: user.mailBody ?? this.smtp.body,
      });
      const { job: stored, duplicate } = await this.store.enqueue(job);
      if (duplicate) {
        log.info({ job: stored.id, messageId: parsed.messageId }, 'ACCEPTED duplicate delivery, no new fax');
      } else {
        this.metrics?.jobsEnqueued.inc({ source: 'smtp' });
        log.info(
          { job: stored.id, recipients: stored.recipients.length, documents: stored.documents.length, cover: stored.cover.enabled, leftOut: job.meta?.leftOut?.length ?? 0 },
          'QUEUED',
        );
      }
      return `2.0.0 queued as ${stored.id}`;
    } catch (err) {
      if (isFaxgateError(err) && err.code === 'NOTHING_TO_FAX') log.info({ reason: err.message }, 'REJECTED');
      throw err;
    } finally {
      await fsp.rm(workDir, { recursive: true, force: true }).catch(() => undefined);
    }
  }
}
