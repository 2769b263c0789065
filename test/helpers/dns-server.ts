// A real DNS server on loopback (dns2, UDP) serving the TXT and A records a test gives it, and
// counting the questions it was asked; and a "server" that never answers, for DNS outages.
import dgram from "node:dgram";
import type { AddressInfo } from "node:net";
import dns2 from "dns2";

const { Packet } = dns2;

export interface TestDns {
  /** "127.0.0.1:PORT", for dns.servers */
  server: string;
  /** questions asked so far, "TXT name" each */
  asked: string[];
  /** name (lower case) -> TXT strings; a name absent answers NXDOMAIN */
  txt: Map<string, string[]>;
  close(): Promise<void>;
}

/** TXT strings longer than 255 bytes are split into character-strings, as zone files do. */
function chunks(s: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < s.length; i += 255) out.push(s.slice(i, i + 255));
  return out;
}

export async function startTestDns(records: Record<string, string[]>, ttl = 300): Promise<TestDns> {
  const txt = new Map(Object.entries(records).map(([k, v]) => [k.toLowerCase(), v]));
  const asked: string[] = [];
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const [q] = request.questions;
      const name = String(q?.name ?? "").toLowerCase();
      const type = Object.entries(Packet.TYPE).find(([, v]) => v === q?.type)?.[0] ?? String(q?.type);
      asked.push(`${type} ${name}`);
      const values = txt.get(name);
      if (!values) {
        // no such name: NXDOMAIN (an existing name without the type asked: no answers)
        (response.header as { rcode: number }).rcode = [...txt.keys()].some((k) => k.endsWith(`.${name}`))
          ? 0
          : 3 /* NXDOMAIN */;
      } else if (q?.type === Packet.TYPE.TXT) {
        for (const v of values)
          response.answers.push({
            name: q.name,
            type: Packet.TYPE.TXT,
            class: Packet.CLASS.IN,
            ttl,
            data: chunks(v),
          } as never);
      }
      send(response);
    },
  });
  await new Promise<void>((resolve) => {
    server.on("listening", () => resolve());
    void server.listen({ udp: { port: 0, address: "127.0.0.1" } });
  });
  const port = (server.addresses().udp as AddressInfo).port;
  return {
    server: `127.0.0.1:${port}`,
    asked,
    txt,
    async close() {
      await server.close();
    },
  };
}

/** A UDP port that takes questions and never answers. */
export async function startSilentDns(): Promise<{ server: string; close(): Promise<void> }> {
  const sock = dgram.createSocket("udp4");
  await new Promise<void>((resolve) => sock.bind(0, "127.0.0.1", resolve));
  const { port } = sock.address();
  return { server: `127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => sock.close(() => resolve())) };
}
