// People from the directory (docs/identity.md): the LDAP sync on its timer, its last good list
// read back from the store at start (an outage at start does not empty the gateway), and its
// state on /readyz and the metrics. A reload (SIGHUP, `faxgate directory sync`) reads the stored
// list again and syncs.
import { type DirectoryConfig, directorySyncMs, type LdapConfig } from "../config/index.js";
import {
  type DirectoryPerson,
  DirectorySync,
  LdapSource,
  Leavers,
  mergePeople,
  type SyncStatus,
  ScimDirectory,
  scimRoutes,
} from "../directory/index.js";
import { PersonKeys } from "../store/index.js";
import type { DirectoryPageView } from "../web/index.js";
import type { FastifyInstance } from "fastify";
import { describeError } from "../errors.js";
import { childLog, type Logger } from "../log/index.js";
import { Periodic } from "../periodic.js";
import type { Core } from "./core.js";
import type { HealthCheck, Part } from "./part.js";

export interface DirectoryParts {
  sync: DirectorySync | null;
  scim: ScimDirectory | null;
  /** the SCIM endpoints, for the console's listener */
  webRoutes: Array<{ prefix: string; routes: (app: FastifyInstance) => Promise<void> }>;
  /** the stored list read again and a sync run now (reload, `faxgate directory sync`) */
  refresh(): Promise<void>;
  /** the operator's directory page (null: no directory source) */
  view: (() => Promise<DirectoryPageView>) | null;
  part: Part;
}

export function createDirectory(core: Core): DirectoryParts {
  const d = core.config.directory;
  const log = childLog(core.logger, { component: "directory" });
  const sync = d?.ldap ? ldapSync(core, d.ldap, d.maxDrop, log) : null;
  // SCIM's people come from the store on every change (another gateway's pushes at each sync)
  const scim: ScimDirectory | null = d?.scim
    ? new ScimDirectory({
        db: core.store.sql,
        ledger: core.ledger,
        config: d.scim,
        changed: () => apply("SCIM change"),
      })
    : null;
  const leavers = leaversOf(core, Boolean(d?.ldap || d?.scim));
  let applied: readonly DirectoryPerson[] = [];
  const apply = async (why: string) => {
    const people = [...(sync?.people() ?? []), ...((await scim?.people()) ?? [])];
    applied = people;
    // whom the list no longer has has left: the doors say so (before the list changes under them)
    const gone = await leavers.update(
      people,
      core.live.config().users.map((u) => u.name),
      new Date(core.clock.now()),
    );
    for (const l of gone) log.info({ person: l.name }, "DIRECTORY person has left");
    await core.live.setDirectoryPeople(people, why);
  };
  const runSync = async () => {
    if (sync) await sync.sync();
    await apply("directory sync");
  };
  const loop = d
    ? new Periodic(runSync, {
        intervalMs: directorySyncMs(d),
        onError: (err) => log.error({ err: describeError(err) }, "DIRECTORY sync failed"),
        unref: true,
      })
    : null;
  if (sync) registerDirectoryGauges(core, () => sync.state());
  return {
    sync,
    scim,
    webRoutes: scim ? [{ prefix: "/scim/v2", routes: (app) => scimRoutes(app, { scim, token: d!.scim!.token }) }] : [],
    refresh: async () => {
      if (!d) return;
      await sync?.loadStored();
      await apply("directory: list reloaded");
      loop?.wake();
    },
    part: directoryPart(core, { loop, sync, leavers, apply, runSync, log }),
    view: d?.ldap || d?.scim ? () => directoryView(core, applied, leavers, sync?.state() ?? null) : null,
  };
}

function ldapSync(core: Core, ldap: LdapConfig, maxDrop: DirectoryConfig["maxDrop"], log: Logger): DirectorySync {
  return new DirectorySync({
    source: new LdapSource(ldap),
    store: core.store,
    ledger: core.ledger,
    clock: core.clock,
    logger: log,
    maxDrop,
    door: "gateway",
  });
}

/** Who has left, known to every door through the live settings when a directory source is set. */
function leaversOf(core: Core, directory: boolean): Leavers {
  const leavers = new Leavers(core.store);
  if (directory)
    core.live.leaversFrom(
      (login) => leavers.leaver(login),
      () => leavers.list().map((l) => l.name),
    );
  return leavers;
}

/** Start: the leavers and the last good list (or, the very first time, a sync), then the timer. */
function directoryPart(
  core: Core,
  p: {
    loop: Periodic<void> | null;
    sync: DirectorySync | null;
    leavers: Leavers;
    apply: (why: string) => Promise<void>;
    runSync: () => Promise<void>;
    log: Logger;
  },
): Part {
  const { loop, sync } = p;
  return {
    name: "directory",
    start: async () => {
      if (!loop) return;
      if (core.config.directory?.scim && !core.config.web)
        p.log.warn("directory.scim is set but web: is not: the SCIM endpoints are served on the console's listener");
      await p.leavers.load();
      const stored = sync ? await sync.loadStored() : false;
      if (stored || !sync) await p.apply("directory: last good list");
      // the very first start has no list: wait for it, so that nobody is refused for a moment
      else await p.runSync();
      loop.start();
    },
    stop: () => loop?.stop(),
    checks: (): Record<string, HealthCheck> => (sync ? { directory: directoryCheck(sync.state()) } : {}),
  };
}

/** What the operator's directory page shows: the mapping as configured, the people as last applied. */
async function directoryView(
  core: Core,
  people: readonly DirectoryPerson[],
  leavers: Leavers,
  lastSync: SyncStatus | null,
): Promise<DirectoryPageView> {
  const d = core.config.directory!;
  const mapping: DirectoryPageView["mapping"] = [];
  for (const [source, map] of [
    ["ldap", d.ldap?.groups],
    ["scim", d.scim],
  ] as const) {
    if (!map) continue;
    const groups = new Set([...Object.keys(map.roles), ...Object.keys(map.inbox)]);
    for (const group of groups) {
      const inbox = map.inbox[group];
      mapping.push({ source, group, role: map.roles[group] ?? null, inbox: inbox ? [inbox].flat() : [] });
    }
  }
  const { shadowed } = mergePeople(core.live.config().users, people);
  const shadowedBy = new Map(shadowed.map((s) => [s.person.id, s.by]));
  const rows = new Map((await new PersonKeys(core.store.sql).all()).map((r) => [r.user, r]));
  const live = new Map(core.live.users().map((u) => [u.name, u]));
  return {
    configured: true,
    mapping,
    people: people.map((p) => ({
      name: p.name,
      email: p.email,
      source: p.source,
      role: p.role,
      inbox: p.inbox,
      mapped: Boolean(p.serviceUserId ?? rows.get(p.name)?.mappedUserId),
      keyed: (live.get(p.name)?.apiKey ?? "") !== "",
      shadowedBy: shadowedBy.get(p.id) ?? null,
    })),
    leavers: leavers.list().map((l) => ({ name: l.name, at: l.at })),
    lastSync: lastSync && {
      lastAttempt: lastSync.lastAttempt,
      lastGood: lastSync.lastGood,
      ok: lastSync.ok,
      problem: lastSync.problem,
    },
  };
}

function directoryCheck(s: SyncStatus): { ok: boolean; detail: string } {
  if (s.ok) return { ok: true, detail: `${s.people} people from LDAP, synced ${s.lastGood ?? "never (stored list)"}` };
  return {
    ok: false,
    detail: `the last sync (${s.lastAttempt}) was not applied: ${s.problem}; using the list of ${s.lastGood ?? "never"} (${s.people} people)`,
  };
}

function registerDirectoryGauges(core: Core, state: () => SyncStatus): void {
  core.metrics.gauge(
    "faxgate_directory_sync_ok",
    "1 when the directory's last sync was applied, 0 when it failed or was refused (the last good list stays)",
    ["source"],
    (g) => g.set({ source: "ldap" }, state().ok ? 1 : 0),
  );
  core.metrics.gauge("faxgate_directory_people", "People in the directory's last good list", ["source"], (g) =>
    g.set({ source: "ldap" }, state().people),
  );
  core.metrics.gauge(
    "faxgate_directory_last_good_seconds",
    "Unix time of the directory's last applied sync (0: none since start)",
    ["source"],
    (g) => {
      const at = state().lastGood;
      g.set({ source: "ldap" }, at ? Date.parse(at) / 1000 : 0);
    },
  );
}
