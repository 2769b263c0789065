// The mail door into the queue (ZoneMTA's `maildrop.add(envelope, stream)`): SMTP after DATA and
// the IMAP mailbox hand over a checked envelope and the message; the answer is the accepted job,
// or a typed refusal (a FaxgateError whose reply the caller sends). Receiving the bytes, the
// one-pass parse, the work folder under incoming/ and the size bound are intake's, not smtp/'s.
import { createReadStream, promises as fsp } from "node:fs";
import path from "node:path";
import type { Readable } from "node:stream";
import { FaxgateError, isFaxgateError } from "../errors.js";
import type { Logger } from "../log/index.js";
import { size as formatSize } from "../format.js";
import type { Accepted } from "./accept.js";
import { acceptMail, type MailAcceptDeps, type MailEnvelope, type ReceivedMessage } from "./accept-mail.js";
import { HeldMemory } from "./mail/held-memory.js";
import { WorkDir, writeIncoming } from "./mail/incoming-file.js";
import type { EnvelopeRecipient } from "./mail/mail-to-job.js";
import { startMailParse } from "./mail/mail-parse.js";
import { type ReplayClaim, type ReplayStore, useSignedMessage } from "../mail-auth/index.js";

export type { MailEnvelope };

export interface MailDoorOptions extends MailAcceptDeps {
  /** The data folder: messages being received live in its incoming/ folder. */
  dataDir: string;
  /** smtp.maxMessageBytes: a longer message is refused (552) once its last byte is in. */
  maxMessageBytes: number;
  /** smtp.senderAuth.maxMessageAgeHours: how long the use of a signed message is remembered past */
  maxMessageAgeHours: number;
  store: MailAcceptDeps["store"] & ReplayStore;
}

export interface MailAcceptOptions {
  /** This message's logger (bound to its session and user); default the door's. */
  log?: Logger;
  /**
   * Asked once the message is whole, before any job, document or conversion exists: throws the
   * refusal, or answers what proved the sender and its fax (smtp.senderAuth's verdict, the signed
   * message's use to record).
   */
  vet?: (message: () => Readable | Buffer) => Promise<Vetted | undefined>;
  /**
   * Asked once `vet` has passed, when the recipients could not be decided before the sender was
   * proved (a public MX stranger's contact names and rules are its claimed user's): the whole list,
   * or the refusal naming the one that cannot be used. Replaces `envelope.recipients`.
   */
  recipients?: () => Promise<EnvelopeRecipient[]>;
}

/** What the door's vet found out about a message it lets in. */
export interface Vetted {
  /** what proved the sender, kept with the job for its outcome mail */
  senderCheck?: string;
  /** the fax numbers were proved by a signature covering the To:/Cc: (or subject) they come from */
  recipientsProved?: boolean;
  /** a signed message: its use is recorded (at most once) before its recipients are looked up and the job made */
  replay?: ReplayClaim;
}

/** Work folders older than this were left by a crash mid-message: their client was never told 250. */
const STALE_MS = 60 * 60_000;

export class MailDoor {
  readonly incomingDir: string;
  /** The buffers small mails are held in, reused from one message to the next (held-memory.ts). */
  private readonly memory = new HeldMemory();

  constructor(private readonly deps: MailDoorOptions) {
    this.incomingDir = path.join(deps.dataDir, "incoming");
  }

  /**
   * The busy answer when the queue is full by the last count (queue.maxWaiting), for a door that
   * can refuse before the message is sent (SMTP at MAIL FROM); null otherwise. The accept step
   * asks again with a fresh count.
   */
  busyNow(door: string): FaxgateError | null {
    return this.deps.pressure.busyNow(door);
  }

  /** Makes incoming/ and removes what a crash left there (the clients will send again). */
  async open(): Promise<void> {
    await fsp.mkdir(this.incomingDir, { recursive: true, mode: 0o750 });
    const cutoff = this.deps.clock.now() - STALE_MS;
    for (const name of await fsp.readdir(this.incomingDir).catch(() => [] as string[])) {
      const p = path.join(this.incomingDir, name);
      const st = await fsp.stat(p).catch(() => null);
      if (st && st.mtimeMs < cutoff) await fsp.rm(p, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  /**
   * One message through the door: a stream (SMTP DATA: parsed in one pass while it arrives) or
   * bytes already whole (a mailbox message: parsed on a reader thread). Resolves once the job is
   * durably queued; the work folder is gone either way.
   */
  async accept(envelope: MailEnvelope, message: Readable | Buffer, opts: MailAcceptOptions = {}): Promise<Accepted> {
    // made only if something of the message must be a file (a big message, a big part)
    const workDir = WorkDir.forMessage(this.incomingDir, this.memory);
    try {
      const received = Buffer.isBuffer(message) ? held(message, workDir) : await this.receive(message, workDir);
      const noRecipients = () => new FaxgateError("NO_RECIPIENTS", "No valid recipients");
      if (envelope.recipients.length === 0 && !opts.recipients) throw noRecipients();
      const kept = received.kept;
      const vetted = await opts.vet?.(() => kept.data ?? createReadStream(kept.path));
      // a copy is refused before anything is done on its user's behalf (contact lookups)
      const claim = vetted?.replay
        ? await useSignedMessage(this.deps.store, vetted.replay, {
            now: this.deps.clock.now(),
            maxMessageAgeHours: this.deps.maxMessageAgeHours,
          })
        : undefined;
      try {
        const recipients = opts.recipients ? await opts.recipients() : envelope.recipients;
        if (recipients.length === 0) throw noRecipients();
        return await acceptMail(
          { ...this.deps, log: opts.log ?? this.deps.log },
          Object.assign(
            {},
            envelope,
            { recipients },
            vetted?.senderCheck !== undefined ? { senderCheck: vetted.senderCheck } : {},
            vetted?.recipientsProved !== undefined ? { recipientsProved: vetted.recipientsProved } : {},
          ),
          received,
        );
      } catch (err) {
        // no job: the sender may send it again. A store that failed may have committed the job
        // after all (its outcome unknown): the use is kept, a copy is refused, never faxed twice.
        const maybeStored = isFaxgateError(err) && err.code === "STORE_UNAVAILABLE";
        if (claim && !maybeStored) await this.deps.store.releaseSignedMessage(claim);
        throw err;
      }
    } finally {
      await workDir.remove();
    }
  }

  /**
   * The stream kept (in memory when small, else in its file) and split by the parser as the bytes
   * arrive, so nothing is read back after the last byte.
   */
  private async receive(stream: Readable, workDir: WorkDir): Promise<ReceivedMessage> {
    const readers = this.deps.readers;
    const parse = startMailParse(workDir, readers.htmlText ? { htmlText: (html) => readers.htmlText!(html) } : {});
    const kept = await writeIncoming(stream, workDir, this.deps.maxMessageBytes, parse.input);
    if (kept.sizeExceeded)
      throw new FaxgateError(
        "TOO_LARGE",
        `Message too big: the limit is ${formatSize(this.deps.maxMessageBytes)}; send fewer or smaller attachments`,
      );
    return { kept, workDir, parsing: parse.done };
  }
}

/** Bytes already whole: kept as they are, parsed from them later. */
function held(data: Buffer, workDir: WorkDir): ReceivedMessage {
  return {
    kept: {
      path: path.join(workDir.path, "message.eml"),
      data,
      bytes: data.length,
      sizeExceeded: false,
    },
    workDir,
  };
}
