// The key reply codes are signed with: 32 random bytes. One gateway: made on first use in the
// data folder (reply-sheet.key, 0600). Gateways sharing a PostgreSQL queue must agree on it (a
// reply may be received by any of them), so it comes from the config (outbound.replySheetKey,
// e.g. ${FAXGATE_REPLY_KEY} from the secrets file). Never logged, printed or put in an error.
import { randomBytes } from "node:crypto";
import { readOrMakeOnce } from "../fs/index.js";
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
  return keyFromText(await readOrMakeOnce(file, () => `${randomBytes(32).toString("base64")}\n`), file);
}
