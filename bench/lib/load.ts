// Runs bench/smtp-load.ts in its own process against a port and reads its one JSON line.
import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

export interface LoadResult {
  accepted: number;
  seconds: number;
  /** per message, MAIL FROM to 250, ms */
  latencies: number[];
  /** each 250: the message's number, its queue id if the reply named one, wall-clock ms */
  replies: Array<{ i: number; id: string | null; at: number }>;
}

export interface LoadOptions {
  port: number;
  sessions: number;
  messages: number;
  from: string;
  /** recipient; "{i}" becomes 1000 + the message's number */
  to?: string;
  /** a real PDF to attach instead of the PDF-shaped filler */
  pdfFile?: string;
  /** a pause after each message in a session */
  gapMs?: number;
  /** a paced load: this many messages a second, whichever session is free */
  rate?: number;
}

const script = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "smtp-load.ts");

export async function runSmtpLoad(o: LoadOptions): Promise<LoadResult> {
  const args = [
    "--import",
    "tsx",
    script,
    String(o.port),
    String(o.sessions),
    String(o.messages),
    o.from,
    o.to ?? "",
    o.pdfFile ?? "",
    String(o.gapMs ?? 0),
    String(o.rate ?? 0),
  ];
  const { stdout } = await promisify(execFile)(process.execPath, args, { maxBuffer: 64 << 20, timeout: 300_000 });
  return JSON.parse(stdout.trim().split("\n").pop()!) as LoadResult;
}

/** The p-th percentile (nearest rank) of xs. */
export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(0, Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1))]!;
}
