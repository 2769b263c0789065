// Gathers the evidence of a sent fax and seals it (bundle.ts): the documents as the gateway
// received and sent them, each recipient's fax as the service rendered it and the service's record
// of it, the transmission report, and the fax's ledger rows. Each bundle made is itself a ledger
// row ("evidence-made", with the manifest's SHA-256), recorded after the bundle is sealed.
// Nothing here logs a document's content or a fax number.
import { mkdir, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { randomUUID } from "node:crypto";
import type { Clock } from "../clock.js";
import type { UserConfig } from "../config/index.js";
import { FaxgateError } from "../errors.js";
import type { FaxApi, FaxRecord } from "../fax/index.js";
import type { Ledger, LedgerActor, LedgerDoor, LedgerObject, LedgerRow } from "../ledger/index.js";
import { jobReport } from "../notify/index.js";
import type { Job, QueueStore, Recipient } from "../store/index.js";
import { sealBundle, type BundleFile, type Manifest } from "./bundle.js";
import type { SigningKey } from "./signing-key.js";
import type { TsaSettings } from "./timestamp.js";

export interface EvidenceDeps {
  store: Pick<QueueStore, "getJob" | "readDocument">;
  /** the fax service as the job's owner (their key) */
  clientFor: (user: string) => FaxApi;
  ledger: Ledger;
  /** the gateway's signing key (signing-key.ts), loaded when first needed */
  key: () => Promise<SigningKey>;
  /** evidence.tsa: a token from this authority for every bundle */
  tsa?: TsaSettings & { whenDown: "refuse" | "without-token" };
  users: () => readonly UserConfig[];
  defaultCountryCode: () => string;
  clock: Clock;
  /** where the service's rendered fax is downloaded to before it is read (deleted at once) */
  scratchDir: string;
}

export interface EvidenceRequest {
  /** 1-based, as `faxgate job` lists them: a bundle of this recipient alone; absent: every sent one */
  recipient?: number;
  actor: LedgerActor;
  door: LedgerDoor;
  client?: string;
  /** make it without a token when the authority gives none (the operator asked for that) */
  withoutTimestamp?: boolean;
}

export interface Evidence {
  zip: Uint8Array;
  fileName: string;
  manifest: Manifest;
  manifestSha256: string;
  timestamped: boolean;
}

/** The ledger's object for a recipient of a job (events.ts: `<job id>#<idx>`, as intake and dispatcher write it). */
export function recipientObject(jobId: string, idx: number): LedgerObject {
  return { kind: "recipient", id: `${jobId}#${idx}` };
}

export class EvidenceMaker {
  constructor(private readonly deps: EvidenceDeps) {}

  async make(job: Job, req: EvidenceRequest): Promise<Evidence> {
    const chosen = this.recipientsOf(job, req.recipient);
    const files: BundleFile[] = [];
    for (const [i, d] of job.documents.entries())
      files.push({
        path: `documents/${i + 1}-${safeName(d.name)}`,
        data: await this.readStored(job, d),
        what: `document ${i + 1} as the gateway sent it to the service (${d.contentType})`,
      });
    if (job.original)
      files.push({
        path: `original/${safeName(job.original.name)}`,
        data: await this.readStored(job, job.original),
        what: `the ${job.source === "smtp" || job.source === "imap" ? "mail" : "file"} as the gateway received it`,
      });
    const client = this.deps.clientFor(job.user);
    const records: Array<{ r: Recipient; record: FaxRecord }> = [];
    for (const r of chosen) {
      const n = r.idx + 1;
      const record = await client.faxInfo(r.messageId!);
      records.push({ r, record });
      files.push({
        path: `recipients/${n}/service-record.json`,
        data: json(record),
        what: `the fax service's record of recipient ${n}'s fax (result, pages, duration, CSID, times)`,
      });
      files.push({
        path: `recipients/${n}/fax-as-rendered.pdf`,
        data: await this.rendered(client, job, r),
        what: `recipient ${n}'s fax as the service rendered it (downloaded from the service)`,
      });
    }
    const user = this.deps.users().find((u) => u.name === job.user);
    const me = await client.me().catch(() => null);
    files.push({
      path: "transmission-report.pdf",
      data: await jobReport({
        store: this.deps.store,
        job: { ...job, recipients: chosen },
        user,
        me,
        now: new Date(this.deps.clock.now()),
        defaultCountryCode: this.deps.defaultCountryCode(),
      }),
      what: "the transmission report",
    });
    const rows = await this.ledgerRows(job, chosen);
    files.push({
      path: "ledger-rows.jsonl",
      data: new TextEncoder().encode(rows.map((row) => `${JSON.stringify(row)}\n`).join("")),
      what: `the ledger's ${rows.length} rows about this fax, each with its chain hash`,
    });
    const key = await this.deps.key();
    const tsa = this.deps.tsa;
    const sealed = await sealBundle({
      files,
      subject: subjectOf(job, records),
      madeAt: new Date(this.deps.clock.now()).toISOString(),
      key,
      ...(tsa ? { tsa, withoutToken: req.withoutTimestamp || tsa.whenDown === "without-token" } : {}),
    });
    await this.deps.ledger.record({
      action: "evidence-made",
      actor: req.actor,
      object: { kind: "job", id: job.id },
      door: req.door,
      ...(req.client ? { client: req.client } : {}),
      detail: {
        manifestSha256: sealed.manifestSha256,
        recipients: chosen.map((r) => r.idx + 1).join(","),
        timestamped: sealed.timestamped,
        key: key.fingerprint,
      },
    });
    const part = req.recipient ? `-recipient-${req.recipient}` : "";
    return { ...sealed, fileName: `evidence-${job.id}${part}.zip` };
  }

  /** The recipients a bundle covers: sent ones only (a bundle proves what the service took). */
  private recipientsOf(job: Job, wanted: number | undefined): Recipient[] {
    if (wanted !== undefined) {
      const r = job.recipients[wanted - 1];
      if (!r)
        throw new FaxgateError(
          "USAGE",
          `job ${job.id} has ${job.recipients.length} recipient(s): choose recipient 1 to ${job.recipients.length}`,
        );
      if (!r.messageId)
        throw new FaxgateError(
          "EVIDENCE_UNAVAILABLE",
          `recipient ${wanted} of job ${job.id} has not been taken by the fax service (${r.state}): there is no sent fax to prove`,
        );
      return [r];
    }
    const sent = job.recipients.filter((r) => r.messageId);
    if (sent.length === 0)
      throw new FaxgateError(
        "EVIDENCE_UNAVAILABLE",
        `job ${job.id} has no fax the service has taken (${job.state}): there is no sent fax to prove`,
      );
    return sent;
  }

  private async readStored(job: Job, doc: Job["documents"][number]): Promise<Uint8Array> {
    try {
      return await this.deps.store.readDocument(doc);
    } catch (err) {
      throw new FaxgateError(
        "EVIDENCE_UNAVAILABLE",
        `a document of job ${job.id} is no longer kept by the gateway (${(err as NodeJS.ErrnoException).code ?? "unreadable"})`,
        { cause: err },
      );
    }
  }

  private async rendered(client: FaxApi, job: Job, r: Recipient): Promise<Uint8Array> {
    await mkdir(this.deps.scratchDir, { recursive: true, mode: 0o700 });
    const file = path.join(this.deps.scratchDir, `evidence-${randomUUID()}.pdf`);
    try {
      await client.downloadFax(r.messageId!, file);
      return await readFile(file);
    } catch (err) {
      if (err instanceof FaxgateError && err.code === "API_NOT_FOUND")
        throw new FaxgateError(
          "EVIDENCE_UNAVAILABLE",
          `the fax service no longer has recipient ${r.idx + 1}'s fax of job ${job.id} (message ${r.messageId}): its copy was deleted`,
          { cause: err },
        );
      throw err;
    } finally {
      await rm(file, { force: true });
    }
  }

  private async ledgerRows(job: Job, chosen: Recipient[]): Promise<LedgerRow[]> {
    const objects: LedgerObject[] = [{ kind: "job", id: job.id }, ...chosen.map((r) => recipientObject(job.id, r.idx))];
    const bySeq = new Map<number, LedgerRow>();
    for (const object of objects) for (const row of await this.deps.ledger.rows({ object })) bySeq.set(row.seq, row);
    return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  }
}

/** What the bundle is about, in the manifest: the job, and each recipient as the service recorded it. */
function subjectOf(job: Job, records: Array<{ r: Recipient; record: FaxRecord }>): Record<string, unknown> {
  return {
    job: { id: job.id, user: job.user, source: job.source, createdAt: job.createdAt, state: job.state },
    recipients: records.map(({ r, record }) => ({
      recipient: r.idx + 1,
      messageId: record.messageId,
      faxNumber: record.faxNumber ?? r.number,
      status: record.status,
      resultCode: record.resultCode ?? null,
      resultInfo: record.resultInfo ?? null,
      pages: record.pagesComplete ?? null,
      pagesCount: record.pagesCount ?? null,
      duration: record.duration ?? null,
      csid: record.faxCsid ?? null,
      attempts: record.faxAttempt ?? null,
      createdAt: record.createdAt ?? null,
      resolvedAt: record.resolvedDate ?? null,
    })),
  };
}

function json(value: unknown): Uint8Array {
  return new TextEncoder().encode(`${JSON.stringify(value, null, 2)}\n`);
}

/** A member name from a sender's file name: no folders, no control characters, not empty. */
function safeName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? "";
  const clean = base
    .replace(/[^\p{L}\p{N}._ -]+/gu, "_")
    .replace(/^\.+/, "_")
    .slice(0, 120);
  return clean || "document";
}
