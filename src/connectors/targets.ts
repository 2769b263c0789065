// Which connector a route's delivery names, the stable name of where it goes (one queued row per
// fax and target), and the connector that delivers a queued row's spec.
import type {
  FhirDelivery,
  GraphDelivery,
  Hl7Delivery,
  InboundDelivery,
  SmbDelivery,
  WebdavDelivery,
} from "../config/index.js";
import type { DeliveryKind } from "../store/index.js";
import type { Connector } from "./connector.js";
import { FhirConnector } from "./fhir.js";
import { GraphConnector } from "./graph.js";
import { Hl7Connector } from "./hl7.js";
import type { SecretReader } from "./secrets.js";
import type { SmartTokens } from "./smart-auth.js";
import { SmbConnector } from "./smb.js";
import { WebdavConnector } from "./webdav.js";

export interface ConnectorTarget {
  kind: DeliveryKind;
  /** "fhir https://ehr.example/fhir", "hl7 engine.example:6661", "webdav https://...", "smb //host/share" */
  target: string;
  spec: unknown;
}

/** The connector target of a route's delivery, or null for the other kinds (mail, folder, inbox). */
export function connectorTarget(d: InboundDelivery): ConnectorTarget | null {
  if ("fhir" in d) return { kind: "fhir", target: `fhir ${d.fhir.base}`, spec: d.fhir };
  if ("hl7" in d) return { kind: "hl7", target: `hl7 ${d.hl7.host}:${d.hl7.port}`, spec: d.hl7 };
  if ("webdav" in d) return { kind: "webdav", target: `webdav ${d.webdav.url}`, spec: d.webdav };
  if ("smb" in d) return { kind: "smb", target: `smb ${d.smb.share}`, spec: d.smb };
  if ("graph" in d)
    return {
      kind: "graph",
      target: `graph ${d.graph.drive ? `drive ${d.graph.drive}` : `site ${d.graph.site}`} ${d.graph.path}`,
      spec: d.graph,
    };
  return null;
}

/** What a person calls where it goes: "the EHR (FHIR)". */
export function kindLabel(kind: DeliveryKind): string {
  const labels: Record<DeliveryKind, string> = {
    fhir: "the EHR (FHIR)",
    hl7: "the EHR (HL7)",
    webdav: "the document folder (WebDAV)",
    smb: "the document folder (SMB)",
    graph: "the document folder (Microsoft Graph)",
  };
  return labels[kind];
}

export interface ConnectorDeps {
  secret: SecretReader;
  tokens: SmartTokens;
  now: () => number;
}

/** The connector of a queued row's spec (the config as it was when the fax was routed). */
export function connectorFor(kind: DeliveryKind, spec: unknown, deps: ConnectorDeps): Connector {
  switch (kind) {
    case "fhir":
      return new FhirConnector(spec as FhirDelivery, deps.secret, deps.tokens);
    case "hl7":
      return new Hl7Connector(spec as Hl7Delivery, deps.now);
    case "webdav":
      return new WebdavConnector(spec as WebdavDelivery, deps.secret);
    case "smb":
      return new SmbConnector(spec as SmbDelivery, deps.secret);
    case "graph":
      return new GraphConnector(spec as GraphDelivery, deps.secret);
  }
}
