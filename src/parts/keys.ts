// With the service's admin key, each user's API key is watched for its expiry and rotated before
// it runs out; a rotated key reloads the users like a SIGHUP does. With directory.keys too, keys
// follow people: the directory's people get keys minted, sealed in the store, deleted as they leave.
import { TotpSealer } from "../auth/index.js";
import { FaxClient } from "../fax/index.js";
import { KeyWatch, KeyMinter } from "../keys/index.js";
import { PersonKeys } from "../store/index.js";
import type { ServiceEndpoint } from "./api.js";
import type { Core } from "./core.js";
import type { Part } from "./part.js";
import { childLog } from "../log/index.js";

export function createKeyWatch(
  core: Core,
  service: ServiceEndpoint,
): {
  keyWatch: KeyWatch | null;
  part: Part;
} {
  const { live } = core;
  const keysConfig = core.config.directory?.keys;
  const minter =
    service.adminKey && keysConfig
      ? new KeyMinter({
          admin: new FaxClient({
            baseUrl: service.baseUrl,
            apiKey: service.adminKey,
            dispatcher: core.api.fax.agent,
            gate: core.api.gate,
          }),
          keys: new PersonKeys(core.store.sql),
          sealer: new TotpSealer(keysConfig.sealKey, "api-key"),
          ledger: core.ledger,
          lifetimeMs: keysConfig.lifetime,
          clock: core.clock,
          logger: childLog(core.logger, { component: "keys" }),
        })
      : null;
  if (keysConfig && !service.adminKey)
    core.logger.warn("directory.keys is set but api.adminKey is not: no keys can be minted for people");
  if (minter) live.fillKeysWith((users, complete) => minter.fill(users, complete));
  const keyWatch = service.adminKey
    ? new KeyWatch({
        baseUrl: service.baseUrl,
        adminKey: service.adminKey,
        agent: core.api.fax.agent,
        gate: core.api.gate,
        dataDir: core.config.data,
        // a directory person without a key yet has no key to watch
        users: () => live.users().filter((u) => u.apiKey !== ""),
        configKeyOf: (name) => live.config().users.find((u) => u.name === name)?.apiKey ?? "",
        store: core.store,
        onRotated: (user) => live.refreshUsers(`key of ${user} rotated`),
        keepMinted: minter ? (user, key) => minter.rotated(user, key) : undefined,
        logger: childLog(core.logger, { component: "keys" }),
        clock: core.clock,
      })
    : null;
  return { keyWatch, part: { name: "keys", start: () => keyWatch?.start(), stop: () => keyWatch?.stop() } };
}
