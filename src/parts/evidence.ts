// The evidence maker of the daemon (the console's button), built once like every part: on the
// core's store, ledger and service clients, with the gateway's signing key loaded at first use
// (made in the data folder then, unless evidence.signingKey is set) and evidence.tsa as configured.
import { readFileSync } from "node:fs";
import path from "node:path";
import { smtpSettings } from "../config/index.js";
import { EvidenceMaker, loadSigningKey, type SigningKey } from "../evidence/index.js";
import type { Core } from "./core.js";

export function createEvidence(core: Core): EvidenceMaker {
  const { config, live, api } = core;
  const tsa = config.evidence.tsa;
  let key: Promise<SigningKey> | null = null;
  return new EvidenceMaker({
    store: core.store,
    clientFor: (user) => api.clientFor(user, "console"),
    ledger: core.ledger,
    key: () => {
      const loading =
        key ??
        loadSigningKey({
          dataDir: config.data,
          configured: config.evidence.signingKey,
          shared: Boolean(config.database),
        });
      // a failed load (an unreadable key file) is tried again on the next bundle
      loading.catch(() => (key = null));
      key = loading;
      return loading;
    },
    ...(tsa
      ? {
          tsa: {
            url: tsa.url,
            timeoutMs: tsa.timeout,
            whenDown: tsa.whenDown,
            ...(tsa.caFile ? { ca: readFileSync(tsa.caFile, "utf8") } : {}),
          },
        }
      : {}),
    users: () => live.users(),
    defaultCountryCode: () => smtpSettings(live.config()).defaultCountryCode,
    clock: core.clock,
    scratchDir: path.join(config.data, "web-tmp"),
  });
}
