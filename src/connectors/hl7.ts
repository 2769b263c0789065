// A received fax as an HL7 v2 MDM^T02 (original document notification and content) over MLLP with
// node-hl7-client: the PDF base64 in an encapsulated-data OBX (ED: ^AP^PDF^Base64^...), the fax's
// time, sender and CSID in TXA and OBX notes, no patient (PID empty: the interface engine files it
// to its unassigned queue). The gateway waits for the ACK: AA delivers; AE/AR (a NAK) and silence
// are tried again later with the same message control id (MSH-10), by which the receiver drops a
// message it has already taken.
import { Client, Message } from "node-hl7-client";
import type { Hl7Delivery } from "../config/index.js";
import type { Connector, DeliveryInput, DeliveryResult } from "./connector.js";
import { networkProblem, refused, unavailable } from "./problem.js";
import { caOf } from "./secrets.js";

const PEER = "HL7 interface";

/** HL7 escapes for a value placed in a field (the delimiters of MSH-2, and line ends). */
export function hl7Escape(v: string): string {
  return v
    .replace(/\\/g, "\\E\\")
    .replace(/\|/g, "\\F\\")
    .replace(/\^/g, "\\S\\")
    .replace(/&/g, "\\T\\")
    .replace(/~/g, "\\R\\")
    .replace(/[\r\n]+/g, " ");
}

/** YYYYMMDDHHMMSS in UTC (+0000), HL7's DTM. */
export function hl7Time(iso: string): string {
  const d = new Date(iso);
  const t = Number.isNaN(d.getTime()) ? new Date(0) : d;
  return `${t.toISOString().replace(/[-:T]/g, "").slice(0, 14)}+0000`;
}

/** The message control id of a delivery: the same on every try, at most 20 characters (ST in 2.5). */
export const controlId = (deliveryId: string): string => deliveryId.replace(/[^A-Za-z0-9]/g, "").slice(0, 20);

/** The MDM^T02 text, segments joined by CR. */
export function mdmT02(spec: Hl7Delivery, input: DeliveryInput, now: string): string {
  const f = input.fax;
  const e = hl7Escape;
  const id = controlId(input.deliveryId);
  const when = hl7Time(f.receivedAt);
  const data = Buffer.from(input.document!).toString("base64");
  return [
    `MSH|^~\\&|${e(spec.sendingApplication)}|${e(spec.sendingFacility)}|${e(spec.receivingApplication)}|${e(spec.receivingFacility)}|${hl7Time(now)}||MDM^T02^MDM_T02|${id}|P|${spec.version}`,
    `EVN|T02|${hl7Time(now)}`,
    "PID|1||",
    "PV1|1|U",
    // TXA-2 type, -3 content presentation (AP: other application data), -4 activity time,
    // -12 unique document number (the fax's message id), -17 completion (AU: authenticated), -19 availability
    `TXA|1|${e(spec.documentType)}|AP|${when}||||||||${e(f.messageId)}|||||AU||AV`,
    `OBX|1|ED|${e(spec.documentType)}^Fax document||^AP^PDF^Base64^${data}||||||F|||${when}`,
    `NTE|1||Fax from ${e(f.sender ?? "unknown")} (CSID ${e(f.csid ?? "none")}), ${f.pages ?? 0} pages, received ${e(f.receivedAt)}`,
  ].join("\r");
}

export class Hl7Connector implements Connector {
  constructor(
    private readonly spec: Hl7Delivery,
    private readonly now: () => number,
  ) {}

  async deliver(input: DeliveryInput): Promise<DeliveryResult> {
    if (!input.document) throw refused(`no document to send (the reception ${input.fax.status})`);
    const spec = this.spec;
    const id = controlId(input.deliveryId);
    const text = mdmT02(spec, input, new Date(this.now()).toISOString());
    const ca = caOf(spec.caFile);
    const client = new Client({
      host: spec.host,
      // the library's own retries would hide silence from the queue: one connection, one try
      maxConnectionAttempts: 1,
      maxAttempts: 2,
      ...(spec.tls ? { tls: ca ? { ca, servername: spec.host } : true } : {}),
    });
    let settle: (v: { code: string; text: string }) => void = () => undefined;
    let fail: (e: Error) => void = () => undefined;
    const acked = new Promise<{ code: string; text: string }>((resolve, reject) => {
      settle = resolve;
      fail = reject;
    });
    const conn = client.createConnection(
      { port: spec.port, waitAck: true, maxConnectionAttempts: 1, autoConnect: true },
      (res) => {
        const ack = res.getMessage();
        if (ack.get("MSA.2").toString() !== id) return;
        settle({ code: ack.get("MSA.1").toString(), text: ack.get("MSA.3").toString() || ack.get("ERR.8").toString() });
      },
    );
    conn.on("client.error", (err: unknown) => fail(networkProblem(err, PEER)));
    conn.on("close", () => fail(unavailable(`the ${PEER} closed the connection before its ACK`)));
    const timer = setTimeout(
      () => fail(unavailable(`no ACK from the ${PEER} within ${Math.round(spec.ackTimeout / 1000)}s`)),
      spec.ackTimeout,
    );
    try {
      await Promise.race([conn.sendMessage(new Message({ text })), acked]).catch((err: unknown) => {
        throw networkProblem(err, PEER);
      });
      const ack = await acked;
      if (ack.code === "AA" || ack.code === "CA") return { where: `MDM^T02 ${id} to ${spec.host}:${spec.port}` };
      // AE: the receiver had an error, AR: it refused; both tried again (an engine's queue may be down)
      throw unavailable(`a NAK (${ack.code}) from the ${PEER}${ack.text ? `: ${ack.text.slice(0, 120)}` : ""}`);
    } finally {
      clearTimeout(timer);
      await conn.close().catch(() => undefined);
      client.removeAllListeners();
    }
  }
}
