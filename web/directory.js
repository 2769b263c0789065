// The operator's directory page (GET /api/admin/directory): the last LDAP sync, the group ->
// role/inbox mapping as configured, the people the directory gave, and who has left. Read-only.
import { announce, api, h, requireSession, when } from "./app.js";

await requireSession();

const rows = (id, list, cells) =>
  document
    .querySelector(`#${id} tbody`)
    .replaceChildren(
      ...list.map((x) => h("tr", {}, ...cells(x).map(([label, text]) => h("td", { "data-label": label }, text)))),
    );

function canFax(p) {
  if (p.shadowedBy) return `no: users: entry ${p.shadowedBy} wins`;
  if (p.keyed) return "yes";
  return p.mapped ? "not yet: key not minted" : "no: unmapped (faxgate directory map)";
}

try {
  const { data } = await api("GET", "/api/admin/directory");
  if (!data.configured) announce("No directory is configured (directory.ldap or directory.scim): users: is the list.");
  const s = data.lastSync;
  document.getElementById("sync").textContent = !s
    ? "No LDAP source: SCIM pushes people as they change."
    : s.ok
      ? `Applied ${when(s.lastGood)}.`
      : `Not applied (${when(s.lastAttempt)}): ${s.problem}. The list of ${s.lastGood ? when(s.lastGood) : "the store"} stays.`;
  rows("mapping", data.mapping, (m) => [
    ["Source", m.source],
    ["Group", m.group],
    ["Role", m.role ?? ""],
    ["Inboxes", m.inbox.join(", ")],
  ]);
  rows("people", data.people, (p) => [
    ["Name", p.name],
    ["E-mail", p.email],
    ["Source", p.source],
    ["Role", p.role],
    ["Inboxes", p.inbox.join(", ")],
    ["Can fax", canFax(p)],
  ]);
  rows("leavers", data.leavers, (l) => [
    ["Name", l.name],
    ["Left", when(l.at)],
  ]);
} catch (err) {
  announce(err.message, true);
}
