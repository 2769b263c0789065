// The key reply codes are signed with: 32 random bytes. One gateway: made on first use in the
// data folder (reply-sheet.key, 0600). Gateways sharing a PostgreSQL queue must agree on it (a
// reply may be received by any of them), so it comes from the config (outbound.replySheetKey,
// e.g. ${FAXGATE_REPLY_KEY} from the secrets file). Never logged, printed or put in an error.
import { randomBytes, randomUUID } from "node:crypto";
import { link, mkdir, open, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { FaxgateError } from "../errors.js";

export const REPLY_KEY_FILE = "reply-sheet.key";

function keyFromText(text: string, source: string): Buffer {
  const key = Buffer.from(text.trim(), "base64");
  if (key.length < 16)
    throw new FaxgateError("CONFIG_INVALID", `${source} must be at least 16 bytes, base64`, { field: source });
  return key;
}

/** The configured key, else the data folder's, made there on first use (link(): two makers agree). */
export async function loadReplyKey(opts: { dataDir: string; configured?: string; shared?: boolean }): Promise<Buffer> {
  if (opts.configured) return keyFromText(opts.configured, "outbound.replySheetKey");
  if (opts.shared)
    throw new FaxgateError(
      "CONFIG_INVALID",
      "gateways that share a PostgreSQL queue sign reply sheets with one key: set outbound.replySheetKey " +
        "(32 random bytes, base64, e.g. ${FAXGATE_REPLY_KEY} from the secrets file)",
      { field: "outbound.replySheetKey" },
    );
  const file = path.join(opts.dataDir, REPLY_KEY_FILE);
  const existing = await readFile(file, "utf8").catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return null;
    throw err;
  });
  if (existing !== null) return keyFromText(existing, file);
  await mkdir(opts.dataDir, { recursive: true });
  const tmp = `${file}.${randomUUID()}.tmp`;
  const fh = await open(tmp, "wx", 0o600);
  try {
    await fh.writeFile(`${randomBytes(32).toString("base64")}\n`);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await link(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  } finally {
    await rm(tmp, { force: true });
  }
  return keyFromText(await readFile(file, "utf8"), file);
}
