// A fax typed in by a person (`faxgate send`, the web console): numbers or contact names, files
// from their disk, cover on or off. The checks are those of mail and print: the number is
// normalised and passed through the destination policy, a contact name is looked up with the
// user's key, each file is sniffed and office documents become PDF. The form door: these checks,
// then `acceptForm`, which queues the fax through the one accept step of every intake.
import path from "node:path";
import { FaxgateError } from "../errors.js";
import type { FaxApi } from "../fax/index.js";
import type { PartialMode } from "../config/index.js";
import type { CoverSpec, JobSource, LeftOut, NewDocument, NewRecipient } from "../store/index.js";
import { acceptJob, type AcceptDeps, type Accepted } from "./accept.js";
import { type DestinationCheck, decideRecipient } from "../recipients/index.js";
import { sniffFileType } from "./documents/file-type.js";
import type { DocumentConverter } from "./office/convert-queue.js";
import { officeExtension, pdfName } from "./office/office-convert.js";

export interface DestinationInput {
  /** what the person typed: a number, or a contact's name when `contacts` is given */
  to: string[];
  user: string;
  defaultCountryCode: string;
  destinations: DestinationCheck;
  /** the user's API client, to look contact names up; without it only numbers are taken */
  contacts?: FaxApi;
  /** how a refused entry is named in the message, e.g. (t) => `--to ${t}` */
  label?: (entry: string) => string;
}

/** Numbers (or contacts) to recipients; refuses the first bad one with a message naming it. */
export async function newFaxRecipients(input: DestinationInput): Promise<NewRecipient[]> {
  const label = input.label ?? ((t: string) => t);
  const contacts = input.contacts;
  const rules = {
    destinations: input.destinations,
    defaultCountryCode: input.defaultCountryCode,
    ...(contacts ? { contacts: () => contacts } : {}),
  };
  const out: NewRecipient[] = [];
  for (const raw of input.to
    .flatMap((t) => t.split(","))
    .map((t) => t.trim())
    .filter(Boolean)) {
    const d = await decideRecipient(input.user, /[a-zA-Z]/.test(raw) ? { contact: raw } : { number: raw }, rules);
    if (!d.ok && d.code === "BAD_NUMBER") throw new FaxgateError("BAD_NUMBER", `${label(raw)}: ${d.reason}`);
    if (!d.ok) throw new FaxgateError("DESTINATION_REFUSED", `${label(raw)}: destination not allowed: ${d.reason}`);
    out.push(d.recipient);
  }
  return out;
}

export interface UploadedFile {
  path: string;
  /** the name the person gave the file */
  name: string;
}

/**
 * Sniffs each file and converts office documents to PDF (every one is checked before the first,
 * slow, conversion starts). `label` names a file in a refusal; `user` takes the conversions' turns
 * in a fair queue (./convert-queue.ts). Call it once the recipients are known to be good: a fax
 * refused for its number must not have cost a conversion. A file that cannot be faxed refuses the
 * fax, naming every such file, unless `partial` is `send` (intake.partial) and something else can
 * be sent: then it is listed in `leftOut`, marked as sent without.
 */
export async function newFaxDocuments(
  files: UploadedFile[],
  converter: () => DocumentConverter,
  label: (f: UploadedFile) => string = (f) => f.name,
  user?: string,
  partial: PartialMode = "refuse",
): Promise<{ documents: NewDocument[]; leftOut: LeftOut[] }> {
  const documents: NewDocument[] = [];
  const office: Array<{ index: number; file: UploadedFile; ext: string }> = [];
  const missing: LeftOut[] = [];
  for (const f of files) {
    const type = await sniffFileType(f.path);
    if (!type.faxable) {
      const ext = officeExtension(f.name, type.contentType);
      if (!ext) {
        // named by the file's own name: an upload's path is a scratch name without its extension
        const reason =
          type.reason === "the file is empty"
            ? "the file is empty"
            : `${path.extname(f.name).toLowerCase() || "a file without an extension"} of type ${type.contentType === "application/octet-stream" ? "unknown" : type.contentType} cannot be faxed (PDF, TIFF, PNG, JPEG, plain text or office documents only)`;
        missing.push({ name: label(f), reason });
        continue;
      }
      office.push({ index: documents.length, file: f, ext });
    }
    documents.push({ path: f.path, name: f.name, contentType: type.contentType });
  }
  if (missing.length && (partial !== "send" || documents.length === 0)) {
    throw new FaxgateError(
      "UNSUPPORTED_TYPE",
      `${missing.map((m) => `${m.name}: ${m.reason}`).join("; ")}; nothing was sent, so that no file is left out`,
    );
  }
  if (office.length) {
    const conv = converter();
    for (const o of office) {
      const why = conv.unavailableReason(label(o.file), o.ext);
      if (why) throw new FaxgateError("UNSUPPORTED_TYPE", why);
    }
    for (const o of office) {
      const d = documents[o.index]!;
      documents[o.index] = {
        ...d,
        name: pdfName(d.name),
        contentType: "application/pdf",
        data: await conv.convert({ name: label(o.file), ext: o.ext, path: o.file.path, ...(user ? { user } : {}) }),
      };
    }
  }
  return { documents, leftOut: missing.map((m) => ({ ...m, sentWithout: true })) };
}

/** A fax filled in by a person, its recipients and documents checked by the functions above. */
export interface FaxForm {
  /** `faxgate send` (cli) or the console (web) */
  source: Extract<JobSource, "cli" | "web">;
  user: string;
  recipients: NewRecipient[];
  documents: NewDocument[];
  cover: CoverSpec;
  /** what the job says of where it came from (the command, the console's page) */
  origin: Record<string, string>;
  /** files sent without (intake.partial: send) */
  leftOut?: LeftOut[];
}

/** The form door's last step: the fax queued durably (QUEUED logged with `fields`). */
export function acceptForm(deps: AcceptDeps, form: FaxForm, fields: Record<string, unknown> = {}): Promise<Accepted> {
  return acceptJob(
    deps,
    {
      source: form.source,
      user: form.user,
      recipients: form.recipients,
      documents: form.documents,
      cover: form.cover,
      meta: { origin: form.origin, ...(form.leftOut?.length ? { leftOut: form.leftOut } : {}) },
    },
    fields,
  );
}
