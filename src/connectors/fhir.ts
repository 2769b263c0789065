// A received fax as a FHIR R4 DocumentReference (status current, type and category from the
// config, the PDF inline or as a Binary over inlineMaxBytes, the OCR text where there is one, the
// fax's message id, sender number and CSID as identifiers, its time as date and context.period),
// POSTed as a conditional create keyed on the message id (If-None-Exist), so a try after a crash
// or a 503 finds the document made before instead of making a second. No subject: a fax whose
// patient is not known lands unassigned, in the EHR's work queue.
import { createHash } from "node:crypto";
import type { FhirDelivery } from "../config/index.js";
import type { Connector, DeliveryInput, DeliveryResult } from "./connector.js";
import { HttpsPeer } from "./https-call.js";
import { refused, statusProblem } from "./problem.js";
import { caOf, type SecretReader } from "./secrets.js";
import type { SmartTokens } from "./smart-auth.js";

const FHIR_JSON = "application/fhir+json";
const PEER = "FHIR server";

/** A FHIR id ([A-Za-z0-9-.]{1,64}) for the fax's Binary: the same on every try. */
export const binaryId = (faxId: string): string => `faxgate-${faxId.replace(/[^A-Za-z0-9.-]/g, "-")}`.slice(0, 64);

/** The DocumentReference of a fax (exported for the tests that read it back). */
export function documentReference(
  spec: FhirDelivery,
  input: DeliveryInput,
  attachment: { data: string } | { url: string },
): Record<string, unknown> {
  const f = input.fax;
  const doc = input.document!;
  const sys = spec.identifierSystem;
  const identifier: Array<Record<string, unknown>> = [{ use: "official", system: sys, value: f.messageId }];
  if (f.sender) identifier.push({ use: "secondary", system: `${sys}:sender`, value: f.sender });
  if (f.csid) identifier.push({ use: "secondary", system: `${sys}:csid`, value: f.csid });
  const content: Array<Record<string, unknown>> = [
    {
      attachment: {
        contentType: "application/pdf",
        ...attachment,
        size: doc.byteLength,
        hash: createHash("sha1").update(doc).digest("base64"),
        title: `fax ${f.receivedAt.slice(0, 10)}.pdf`,
        creation: f.receivedAt,
      },
    },
  ];
  if (f.text)
    content.push({
      attachment: {
        contentType: "text/plain; charset=utf-8",
        data: Buffer.from(f.text, "utf8").toString("base64"),
        title: "text of the fax (OCR)",
      },
    });
  return {
    resourceType: "DocumentReference",
    status: "current",
    docStatus: "final",
    identifier,
    type: { coding: [spec.type] },
    category: [{ coding: [spec.category] }],
    date: f.receivedAt,
    description: `Fax received ${f.receivedAt}${f.pages != null ? `, ${f.pages} pages` : ""}`,
    content,
    context: {
      period: { start: f.receivedAt },
      related: [{ identifier: { system: sys, value: f.messageId }, display: "the fax as the fax service received it" }],
    },
  };
}

export class FhirConnector implements Connector {
  constructor(
    private readonly spec: FhirDelivery,
    private readonly secret: SecretReader,
    private readonly tokens: SmartTokens,
  ) {}

  async deliver(input: DeliveryInput): Promise<DeliveryResult> {
    if (!input.document) throw refused(`no document to send (the reception ${input.fax.status})`);
    const spec = this.spec;
    const base = spec.base.replace(/\/+$/, "");
    const urls = [base, ...("smart" in spec.auth ? [spec.auth.smart.tokenUrl] : [])];
    const peer = new HttpsPeer(urls, caOf(spec.caFile), spec.timeout, PEER);
    try {
      const auth = await this.tokens.authorization(spec.auth, this.secret, peer);
      const headers = { authorization: auth, accept: FHIR_JSON, "content-type": FHIR_JSON };
      let attachment: { data: string } | { url: string };
      if (input.document.byteLength > spec.inlineMaxBytes) {
        // PUT with our own id: the same Binary on every try (update as create)
        const id = binaryId(input.fax.id);
        await this.call(peer, `${base}/Binary/${id}`, {
          method: "PUT",
          headers,
          body: JSON.stringify({
            resourceType: "Binary",
            id,
            contentType: "application/pdf",
            data: Buffer.from(input.document).toString("base64"),
          }),
        });
        attachment = { url: `Binary/${id}` };
      } else attachment = { data: Buffer.from(input.document).toString("base64") };
      const key = `identifier=${encodeURIComponent(`${spec.identifierSystem}|${input.fax.messageId}`)}`;
      const res = await this.call(peer, `${base}/DocumentReference`, {
        method: "POST",
        headers: { ...headers, "if-none-exist": key, prefer: "return=minimal" },
        body: JSON.stringify(documentReference(spec, input, attachment)),
      });
      return { where: this.placed(res, base) };
    } finally {
      await peer.close();
    }
  }

  /** A call that, on a 401 with a SMART token, gets a new token once (the EHR may have revoked it). */
  private async call(
    peer: HttpsPeer,
    url: string,
    init: { method: string; headers: Record<string, string>; body: string },
  ): Promise<Awaited<ReturnType<HttpsPeer["call"]>>> {
    const first = await peer.call(url, init, (s) => (s >= 200 && s < 300) || s === 401);
    if (first.status !== 401) return first;
    if (!("smart" in this.spec.auth)) throw statusProblem(401, PEER);
    this.tokens.forget(this.spec.auth);
    const auth = await this.tokens.authorization(this.spec.auth, this.secret, peer);
    return peer.call(url, { ...init, headers: { ...init.headers, authorization: auth } });
  }

  /** "DocumentReference/<id>" from the Location header (or the body), else the collection. */
  private placed(res: { headers: Record<string, string | string[] | undefined>; body: string }, base: string): string {
    const loc = res.headers.location ?? res.headers["content-location"];
    const m = /DocumentReference\/([A-Za-z0-9.-]{1,64})/.exec(String(Array.isArray(loc) ? loc[0] : (loc ?? "")));
    if (m) return `DocumentReference/${m[1]}`;
    try {
      const body = JSON.parse(res.body) as { id?: string };
      if (body.id) return `DocumentReference/${body.id}`;
    } catch {
      // a minimal answer has no body
    }
    return `DocumentReference at ${new URL(base).host}`;
  }
}
