// What a DKIM signature proves about a message beyond its sender: which aligned signatures verified
// (the replay keys), and whether they cover the Date, Message-ID, To, Cc and Subject the message
// shows. Both doors ask this (the public MX after mailauth's authenticate, the mailbox intake after
// dkimVerify of the fetched source), so that a copy of a signed mail is judged the same at each.
//
// "Covers" means every field of that name in the message is signed: DKIM signs fields from the
// bottom, as many as h= names them, so a second To: added above a signed one is shown by mail
// readers and signed by nobody. A field is covered when one aligned signature signed as many of
// it as the message has (none of none counts: h= naming an absent field forbids adding one).
import type { Readable } from "node:stream";
import { dkimVerify } from "mailauth";
import addressparser from "nodemailer/lib/addressparser";
import { aligned, orgOf } from "./alignment.js";
import { sha256Hex } from "../sha256.js";

/** mailauth's DKIM answer, as far as it is read here (authenticate's `dkim`, or dkimVerify's). */
export interface DkimOutcome {
  headerFrom?: string[];
  results?: Array<{
    /** sha256 of the signature's b= bytes (mailauth) */
    id?: string;
    signingDomain?: string;
    status: { result: string };
    /** the header lines this signature signed, as they are in the message */
    signingHeaders?: { headers?: string[] };
  }>;
}

export interface SignedMessage {
  /** the d= of each aligned signature that verified; empty: the message is not signed for its sender */
  signers: string[];
  /** what marks this message in the replay record: each aligned signature, its signed Message-ID */
  keys: string[];
  /** the signed Date:, when one aligned signature covers it and it can be read */
  date?: Date;
  /** why there is no signed date (for the refusal) */
  dateWhy?: string;
  /** To: and Cc: are covered by one aligned signature: the recipients the message names are the sender's */
  recipientsSigned: boolean;
  /** Subject: is covered (the mailbox intake reads fax numbers from subject tags) */
  subjectSigned: boolean;
  /** the addresses of every To: and Cc: field, as written */
  written: string[];
  /** a signature of the sender's domain could not be checked now (its key's DNS lookup failed) */
  temporary: boolean;
}

interface Field {
  key: string;
  value: string;
}

const fieldOf = (line: string): Field => {
  const colon = line.indexOf(":");
  return {
    key: line
      .slice(0, colon < 0 ? line.length : colon)
      .trim()
      .toLowerCase(),
    value:
      colon < 0
        ? ""
        : line
            .slice(colon + 1)
            .replace(/\r?\n[ \t]+/g, " ")
            .trim(),
  };
};

const count = (fields: Field[], key: string): number => fields.filter((f) => f.key === key).length;

/** The replay key of a Message-ID, scoped to the sender's organisation (another domain cannot spend it). */
export function messageIdKey(fromDomain: string, messageId: string): string {
  return `mid:${orgOf(fromDomain.toLowerCase())}:${sha256Hex(messageId.trim().toLowerCase())}`;
}

/**
 * Reads what the verifying signatures of `fromDomain` prove. `dkim` must be mailauth's answer for
 * this very message (its header lines are read from it, not from the message again).
 */
export function readSignedMessage(dkim: DkimOutcome, fromDomain: string, strict: boolean): SignedMessage {
  const parsed = (dkim as { headers?: { parsed?: Array<{ line: Buffer | string }> } }).headers?.parsed ?? [];
  const fields = parsed.map((h) => fieldOf(String(h.line)));
  // a verified signature always has its b= (mailauth's id is its hash)
  const passing = (dkim.results ?? []).filter(
    (r) => r.status.result === "pass" && r.id && r.signingDomain && aligned(r.signingDomain, fromDomain, strict),
  );
  const signed = passing.map((r) => (r.signingHeaders?.headers ?? []).map(fieldOf));
  const covered = (key: string): Field[] | null => {
    const n = count(fields, key);
    const by = signed.find((s) => count(s, key) >= n);
    return by ? by.filter((f) => f.key === key) : null;
  };

  const written: string[] = [];
  for (const f of fields)
    if (f.key === "to" || f.key === "cc")
      for (const a of addressparser(f.value, { flatten: true })) if (a.address) written.push(a.address);

  const keys = passing.map((r) => `dkim:${r.signingDomain!.toLowerCase()}:${r.id}`);
  // a signed Message-ID marks the message even when it is signed again (a resent copy, another selector)
  const mid = covered("message-id");
  if (passing.length && mid?.length === 1 && mid[0]!.value) keys.push(messageIdKey(fromDomain, mid[0]!.value));

  const out: SignedMessage = {
    signers: passing.map((r) => r.signingDomain!.toLowerCase()),
    keys,
    recipientsSigned:
      passing.length > 0 && signed.some((s) => ["to", "cc"].every((k) => count(s, k) >= count(fields, k))),
    subjectSigned: passing.length > 0 && covered("subject") !== null,
    written,
    temporary: (dkim.results ?? []).some(
      (r) => r.status.result === "temperror" && r.signingDomain && aligned(r.signingDomain, fromDomain, strict),
    ),
  };
  const dates = covered("date");
  if (!passing.length) out.dateWhy = "the message carries no signature of its sender's domain";
  else if (count(fields, "date") !== 1) out.dateWhy = `it has ${count(fields, "date")} Date: fields, not one`;
  else if (!dates?.length) out.dateWhy = "its signature does not cover the Date: field";
  else {
    const at = new Date(dates[0]!.value);
    if (Number.isNaN(at.getTime())) out.dateWhy = "its signed Date: cannot be read";
    else out.date = at;
  }
  return out;
}

/** The mailbox door's own DKIM check of a fetched message (its provider's verdict is not enough for this). */
export async function verifySignedMessage(
  message: Buffer | Readable,
  fromDomain: string,
  opts: { resolve: unknown; minKeyBits: number; strict: boolean },
): Promise<SignedMessage> {
  const dkim = (await dkimVerify(message, {
    resolver: opts.resolve as never,
    minBitLength: opts.minKeyBits,
  } as never)) as unknown as DkimOutcome;
  return readSignedMessage(dkim, fromDomain, opts.strict);
}
