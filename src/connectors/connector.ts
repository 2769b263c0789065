// What every connector is given and answers: the kept fax with its document, the rule that sent
// it, and the delivery's own id (stable across tries: an HL7 control id, a Binary's id); what it
// answers is where the fax now is, for the timeline ("DocumentReference/42", a file's path).
import type { ReceivedFax } from "../received/index.js";

export interface DeliveryInput {
  fax: ReceivedFax;
  /** the PDF; null for a failed reception (connectors that need a document refuse it) */
  document: Uint8Array | null;
  rule: string;
  deliveryId: string;
}

export interface DeliveryResult {
  /** where it went, for the timeline and the row (no content, no number) */
  where: string;
}

export interface Connector {
  /** Throws a FaxgateError (CONNECTOR_UNAVAILABLE: tried again; CONNECTOR_REFUSED: failed) when not delivered. */
  deliver(input: DeliveryInput): Promise<DeliveryResult>;
}
