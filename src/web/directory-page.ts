// The operator's directory page (issue 50): how the directory's groups map to faxgate roles and
// inboxes, the people it gave the gateway (with where each came from and whether they can fax: a
// service user id, a key), who has left, and the last LDAP sync's result. Read-only: the mapping
// is config (directory.ldap.groups, directory.scim), a person's service user id is set with
// `faxgate directory map`. Anyone but an operator is refused 403.
import type { FastifyPluginAsync } from "fastify";
import { sessionOf } from "./sessions.js";

export interface DirectoryPageView {
  /** a directory source is configured (LDAP or SCIM) */
  configured: boolean;
  mapping: Array<{ source: "ldap" | "scim"; group: string; role: string | null; inbox: string[] }>;
  people: Array<{
    name: string;
    email: string;
    source: "ldap" | "scim";
    role: "user" | "admin";
    inbox: string[];
    /** the fax service user id is known (directory or mapped) */
    mapped: boolean;
    /** the person has a key to fax with (minted or written) */
    keyed: boolean;
    /** a `users:` entry of the same name or address wins over this person */
    shadowedBy: string | null;
  }>;
  leavers: Array<{ name: string; at: string }>;
  /** the LDAP sync's state (null: no LDAP source) */
  lastSync: { lastAttempt: string | null; lastGood: string | null; ok: boolean; problem: string | null } | null;
}

export const directoryPageRoutes: FastifyPluginAsync<{ view?: () => Promise<DirectoryPageView> }> = async (
  api,
  { view },
) => {
  api.get("/api/admin/directory", async (req, reply) => {
    if (!sessionOf(req).admin)
      return reply.code(403).send({ error: "only an operator (role admin) may see the directory's mapping" });
    if (!view) return { configured: false, mapping: [], people: [], leavers: [], lastSync: null };
    return view();
  });
};
