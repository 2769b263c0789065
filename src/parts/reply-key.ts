// The fleet's reply sheet key (docs/inbound.md, "Reply sheets"), loaded once per gateway and shared
// by the part that signs sheets (dispatch) and the one that checks them (OCR): replySheets.signingKey,
// else the shared store's with a PostgreSQL queue, else the data folder's.
import { loadReplyKey, replyKeyMade } from "../reply-sheet/index.js";
import { stateOnce, getState } from "../store/index.js";
import type { Core } from "./core.js";

const loaded = new WeakMap<Core, Promise<Buffer>>();

export function replyKeyOf(core: Core): () => Promise<Buffer> {
  return () => {
    let key = loaded.get(core);
    if (!key) {
      const { config, store } = core;
      key = loadReplyKey({
        dataDir: config.data,
        configured: config.replySheets.signingKey,
        shared: config.database ? (name, value) => stateOnce(store.sql, name, value) : undefined,
      });
      // a failed load (the store down at that moment) is tried again by the next sheet
      key.catch(() => loaded.delete(core));
      loaded.set(core, key);
    }
    return key;
  };
}

/** Whether the fleet has made a reply sheet yet (replySheets.look auto); true once, true for good. */
export function replySheetsInUse(core: Core): () => Promise<boolean> {
  let made = false;
  return async () => {
    if (made) return true;
    const { config, store } = core;
    made = await replyKeyMade({
      dataDir: config.data,
      configured: config.replySheets.signingKey,
      shared: config.database ? (name) => getState(store.sql, name) : undefined,
    });
    return made;
  };
}
