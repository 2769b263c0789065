// The key reply codes are signed with: 32 random bytes. Every gateway that may receive a reply
// must hold the key that signed its sheet, so a fleet sharing a PostgreSQL queue has one key:
// replySheets.signingKey (e.g. ${FAXGATE_REPLY_KEY} from the secrets file), else the one kept in
// the shared store (the first gateway to need it writes it; the rest read that one). A single
// gateway on SQLite keeps it in the data folder (reply-sheet.key, 0600). Never logged, printed or
// put in an error.
import { randomBytes } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { FaxgateError } from "../errors.js";
import { readOrMakeOnce } from "../fs/index.js";

export const REPLY_KEY_FILE = "reply-sheet.key";
/** Its name in the shared store's kv table. */
export const REPLY_KEY_STATE = "reply-sheet-key";

/** The shared store's one-value-for-all door (store/sql/kv.ts stateOnce on the queue's Db). */
export type SharedState = (key: string, value: string) => Promise<string>;

function keyFromText(text: string, source: string): Buffer {
  const key = Buffer.from(text.trim(), "base64");
  if (key.length < 16)
    throw new FaxgateError("CONFIG_INVALID", `${source} must be at least 16 bytes, base64`, { field: source });
  return key;
}

/** The configured key, else the shared store's, else the data folder's (made on first use). */
export async function loadReplyKey(opts: {
  dataDir: string;
  configured?: string | undefined;
  shared?: SharedState | undefined;
}): Promise<Buffer> {
  if (opts.configured) return keyFromText(opts.configured, "replySheets.signingKey");
  const file = path.join(opts.dataDir, REPLY_KEY_FILE);
  if (opts.shared) {
    // a gateway that ran alone before keeps signing (and verifying) with the key it had
    const had = await readFile(file, "utf8").catch(() => null);
    const offered = had?.trim() || randomBytes(32).toString("base64");
    return keyFromText(await opts.shared(REPLY_KEY_STATE, offered), "the shared store's reply sheet key");
  }
  return keyFromText(await readOrMakeOnce(file, () => `${randomBytes(32).toString("base64")}\n`), file);
}

/**
 * True once a sheet can have been made (replySheets.look auto): a key is configured, kept in the
 * shared store, or made in the data folder. Keys are made on the first sheet, so a gateway whose
 * people never asked for `[reply]` never looks, and pays nothing for it.
 */
export async function replyKeyMade(opts: {
  dataDir: string;
  configured?: string | undefined;
  shared?: ((key: string) => Promise<string | null>) | undefined;
}): Promise<boolean> {
  if (opts.configured) return true;
  if (
    await stat(path.join(opts.dataDir, REPLY_KEY_FILE)).then(
      () => true,
      () => false,
    )
  )
    return true;
  return opts.shared ? (await opts.shared(REPLY_KEY_STATE)) !== null : false;
}
