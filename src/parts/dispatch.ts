// The dispatcher: claims, sends, retries, reconciles. Mail and print jobs are sent as soon as they
// are queued; with webhooks the service tells results and polling slows to a safety net; new keys
// retry the users held for a refused one.
import { Dispatcher, dispatcherOwner, leaverAwareClients } from "../dispatch/index.js";
import { ReplySheets } from "../reply-sheet/index.js";
import type { Core } from "./core.js";
import { replyKeyOf } from "./reply-key.js";
import type { Part } from "./part.js";
import { childLog } from "../log/index.js";

export function createDispatcher(core: Core): { dispatcher: Dispatcher; part: Part } {
  const { config, store, live, api } = core;
  const queue = config.webhooks
    ? { ...config.queue, pollInterval: Math.max(config.queue.pollInterval, config.webhooks.pollInterval) }
    : config.queue;
  const dispatcher = new Dispatcher({
    store,
    // a leaver's faxes already accepted are finished on the admin key (dispatch/leaver-client.ts)
    clientFor: leaverAwareClients({
      clientFor: (user) => api.clientFor(user, "dispatch"),
      hasLeft: (user) => live.leaver(user) !== null && !live.users().some((u) => u.name === user),
      admin: () => api.adminClient(),
    }),
    clock: core.clock,
    owner: dispatcherOwner(),
    metrics: core.metrics,
    destinations: core.destinations,
    api: config.api,
    queue,
    gate: api.gate,
    ledger: core.ledger,
    replySheets: new ReplySheets({
      key: replyKeyOf(core),
      dirOf: (id) => store.jobFilesDir(id),
      groupOf: (user) => onlyGroupOf(live.config().inbound.groups, user),
    }),
    ...(api.fleet ? { fleet: api.fleet } : {}),
    logger: childLog(core.logger, { component: "dispatch" }),
  });
  store.onEnqueued((job) => dispatcher.wake(job));
  // faxes held for a refused key are tried again at once (each send proves the key first)
  live.onUsersChanged((users) => dispatcher.keysChanged(users.map((u) => u.name)));
  const part: Part = {
    name: "dispatcher",
    start: async () => {
      // users an earlier run left held for a refused key stay held until a working key is loaded
      await dispatcher.holds.load(live.users().map((u) => u.name));
      dispatcher.start();
    },
    stop: (left) => dispatcher.stop({ timeoutMs: left() }),
  };
  return { dispatcher, part };
}

/**
 * The group a reply sheet names: the one inbound group the user is a member of. A member of
 * several is not guessed for (the reply goes to them alone, as before groups).
 */
function onlyGroupOf(
  groups: Readonly<Record<string, { members: readonly string[] }>>,
  user: string,
): string | undefined {
  const mine = Object.entries(groups).filter(([, g]) => g.members.includes(user));
  return mine.length === 1 ? mine[0]![0] : undefined;
}
