// With the service's admin key, each user's API key is watched for its expiry and rotated before
// it runs out; a rotated key reloads the users like a SIGHUP does.
import { KeyWatch } from "../keys/index.js";
import type { ServiceEndpoint } from "./api.js";
import type { Core } from "./core.js";
import type { Part } from "./part.js";

export function createKeyWatch(
  core: Core,
  service: ServiceEndpoint,
): {
  keyWatch: KeyWatch | null;
  part: Part;
} {
  const { live } = core;
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
        logger: core.logger.child({ component: "keys" }),
        clock: core.clock,
      })
    : null;
  return { keyWatch, part: { name: "keys", start: () => keyWatch?.start(), stop: () => keyWatch?.stop() } };
}
