// The SCIM side of the directory (RFC 7643/7644): Users and Groups as provisioning clients
// (Entra ID, Okta, Google) push them, kept in the store (store/sql/directory.ts), and the people
// they make: a user with `active: false` is no person at once; a group's displayName gives its
// members a role and inboxes (directory.scim.roles / inbox). Each change is a ledger row.
import { randomUUID } from "node:crypto";
import type { ScimConfig } from "../config/index.js";
import { FaxgateError } from "../errors.js";
import type { Ledger } from "../ledger/index.js";
import {
  type Db,
  type DirectoryEntry,
  type DirectoryKind,
  deleteDirectoryEntry,
  directoryEntries,
  directoryEntry,
  writeDirectoryEntry,
} from "../store/index.js";
import { groupMeaning } from "./group-map.js";
import type { DirectoryPerson } from "./person.js";
import { usableAddress, usableName } from "./person.js";
import { applyPatch, booleanish, type PatchOp } from "./scim-patch.js";

export const USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User";
export const GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group";

type Json = Record<string, unknown>;

/** A SCIM error: its HTTP status and, where RFC 7644 §3.12 names one, its scimType. */
export class ScimError extends FaxgateError {
  constructor(
    status: number,
    detail: string,
    readonly scimType?: string,
  ) {
    super("USAGE", detail, { httpStatus: status });
  }
}

const TYPE: Record<DirectoryKind, { resourceType: string; schema: string; path: string }> = {
  user: { resourceType: "User", schema: USER_SCHEMA, path: "Users" },
  group: { resourceType: "Group", schema: GROUP_SCHEMA, path: "Groups" },
};

/** The name a resource is unique by: userName (users), displayName (groups). */
function nameOf(kind: DirectoryKind, body: Json): string {
  const v = kind === "user" ? body.userName : body.displayName;
  if (typeof v !== "string" || v.trim() === "")
    throw new ScimError(400, `${kind === "user" ? "userName" : "displayName"} is required`, "invalidValue");
  return v.trim();
}

/** Attribute names as the core schema spells them (clients may send any case). */
function canonical(body: Json): Json {
  const names = ["userName", "displayName", "externalId", "active", "emails", "name", "members", "schemas"];
  const out: Json = {};
  for (const [k, v] of Object.entries(body)) {
    const known = names.find((n) => n.toLowerCase() === k.toLowerCase());
    out[known ?? k] = known === "active" ? booleanish(v) : v;
  }
  return out;
}

export interface ScimDirectoryOptions {
  db: Db;
  ledger: Ledger;
  config: ScimConfig;
  /** told after every change, so the live list follows at once */
  changed: () => Promise<void>;
}

export class ScimDirectory {
  constructor(private readonly opts: ScimDirectoryOptions) {}

  /** The resource as answered: the stored body with id and meta. */
  resource(e: DirectoryEntry, baseUrl: string): Json {
    const t = TYPE[e.kind];
    const { id: _id, meta: _meta, ...body } = e.body;
    return {
      ...body,
      schemas: [t.schema],
      id: e.id,
      meta: {
        resourceType: t.resourceType,
        created: e.createdAt,
        lastModified: e.updatedAt,
        location: `${baseUrl}/${t.path}/${e.id}`,
        version: `W/"${e.version}"`,
      },
    };
  }

  async list(kind: DirectoryKind, filter: string | undefined): Promise<DirectoryEntry[]> {
    const all = await directoryEntries(this.opts.db, kind);
    if (!filter) return all;
    const m = /^\s*([A-Za-z][\w.]*)\s+eq\s+"((?:[^"\\]|\\.)*)"\s*$/i.exec(filter);
    if (!m) throw new ScimError(400, `unsupported filter "${filter}": only attribute eq "value"`, "invalidFilter");
    const attr = m[1]!.toLowerCase();
    const value = m[2]!.replace(/\\(.)/g, "$1");
    return all.filter((e) => {
      if (attr === "id") return e.id === value;
      if (attr === "externalid") return e.externalId === value;
      const v = Object.entries(e.body).find(([k]) => k.toLowerCase() === attr)?.[1];
      // userName and displayName compare without case (RFC 7643 caseExact false)
      return typeof v === "string" && v.toLowerCase() === value.toLowerCase();
    });
  }

  async get(kind: DirectoryKind, id: string): Promise<DirectoryEntry> {
    const e = await directoryEntry(this.opts.db, kind, id);
    if (!e) throw new ScimError(404, `${TYPE[kind].resourceType} ${id} not found`);
    return e;
  }

  create(kind: DirectoryKind, input: Json): Promise<DirectoryEntry> {
    return this.write(kind, randomUUID(), "created", (current) => {
      if (current) throw new ScimError(409, "id taken", "uniqueness");
      return canonical(input);
    });
  }

  replace(kind: DirectoryKind, id: string, input: Json): Promise<DirectoryEntry> {
    return this.write(kind, id, "replaced", (current) => {
      if (!current) throw new ScimError(404, `${TYPE[kind].resourceType} ${id} not found`);
      return canonical(input);
    });
  }

  patch(kind: DirectoryKind, id: string, ops: readonly PatchOp[]): Promise<DirectoryEntry> {
    return this.write(kind, id, "patched", (current) => {
      if (!current) throw new ScimError(404, `${TYPE[kind].resourceType} ${id} not found`);
      try {
        return canonical(applyPatch(current.body, ops));
      } catch (err) {
        throw new ScimError(400, err instanceof Error ? err.message : String(err), "invalidPath");
      }
    });
  }

  async remove(kind: DirectoryKind, id: string): Promise<void> {
    const before = await directoryEntry(this.opts.db, kind, id);
    if (!(await deleteDirectoryEntry(this.opts.db, kind, id)))
      throw new ScimError(404, `${TYPE[kind].resourceType} ${id} not found`);
    await this.record(kind, before ? nameOf(kind, before.body) : id, "deleted", false);
    await this.opts.changed();
  }

  /** Every active SCIM user as a person, with the role and inboxes of their groups. */
  async people(): Promise<DirectoryPerson[]> {
    const [users, groups] = await Promise.all([
      directoryEntries(this.opts.db, "user"),
      directoryEntries(this.opts.db, "group"),
    ]);
    const groupsOf = new Map<string, string[]>();
    for (const g of groups) {
      const members = Array.isArray(g.body.members) ? (g.body.members as Json[]) : [];
      for (const m of members) {
        const id = String(m.value ?? "");
        groupsOf.set(id, [...(groupsOf.get(id) ?? []), String(g.body.displayName ?? "")]);
      }
    }
    const out: DirectoryPerson[] = [];
    for (const u of users) {
      const p = personOf(u, groupsOf.get(u.id) ?? [], this.opts.config);
      if (p) out.push(p);
    }
    return out;
  }

  private async write(
    kind: DirectoryKind,
    id: string,
    what: string,
    body: (current: DirectoryEntry | null) => Json,
  ): Promise<DirectoryEntry> {
    let wasActive = true;
    const stored = await writeDirectoryEntry(
      this.opts.db,
      kind,
      id,
      (current) => {
        wasActive = current?.body.active !== false;
        const next = body(current);
        delete next.id;
        delete next.meta;
        const externalId = typeof next.externalId === "string" ? next.externalId : null;
        return { name: nameOf(kind, next), externalId, body: next };
      },
      (name) => new ScimError(409, `${TYPE[kind].resourceType} "${name}" exists already`, "uniqueness"),
    );
    const left = kind === "user" && wasActive && stored.body.active === false;
    await this.record(kind, nameOf(kind, stored.body), left ? "deactivated" : what, stored.body.active === false);
    await this.opts.changed();
    return stored;
  }

  private record(kind: DirectoryKind, name: string, what: string, inactive: boolean): Promise<void> {
    return this.opts.ledger.record({
      action: "directory-sync",
      actor: { kind: "service" },
      object: kind === "user" ? { kind: "person", id: name } : { kind: "config", id: `directory.scim.group:${name}` },
      door: "api",
      detail: { source: "scim", change: what, ...(kind === "user" ? { active: !inactive } : {}) },
    });
  }
}

/** A SCIM user as a person, or null (inactive, or nothing usable as name or address). */
function personOf(u: DirectoryEntry, groups: readonly string[], map: ScimConfig): DirectoryPerson | null {
  const b = u.body;
  if (b.active === false) return null;
  const userName = String(b.userName ?? "");
  const name = usableName(userName.includes("@") ? userName.slice(0, userName.indexOf("@")) : userName);
  if (!name) return null;
  const emails = (Array.isArray(b.emails) ? (b.emails as Json[]) : [])
    .slice()
    .sort((a, c) => Number(booleanish(c.primary) === true) - Number(booleanish(a.primary) === true));
  const addresses = emails.map((e) => usableAddress(String(e.value ?? ""))).filter((a): a is string => a !== null);
  const fromName = usableAddress(userName);
  const email = addresses[0] ?? fromName;
  if (!email) return null;
  const aliases = [...new Set([...addresses.slice(1), ...(fromName ? [fromName] : [])])].filter(
    (a) => a.toLowerCase() !== email.toLowerCase(),
  );
  const { role, inbox } = groupMeaning(map, groups);
  const person: DirectoryPerson = { source: "scim", id: u.id, name, email, aliases, role, inbox };
  if (typeof b.displayName === "string") person.displayName = b.displayName;
  return person;
}
