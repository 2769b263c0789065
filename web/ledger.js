// The ledger (operators): GET /api/admin/ledger with `faxgate audit export`'s filters, newest
// first; "Older rows" asks for the page before the last row shown; the export links carry the
// same filters. The number is sent to the gateway (which hashes it) but kept out of the address
// bar, so it is not left in the browser's history.
import { announce, api, h, requireSession, when } from "./app.js";

const FIELDS = ["since", "until", "user", "object", "action", "number"];
await requireSession();

let next = null;

function filterParams() {
  const p = new URLSearchParams();
  for (const k of FIELDS) {
    const v = document.getElementById(k).value.trim();
    if (v) p.set(k, v);
  }
  return p;
}

function rowOf(r) {
  const detail = Object.entries(r.detail ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
  return h(
    "tr",
    { "data-seq": r.seq },
    h("td", { "data-label": "#" }, String(r.seq)),
    h("td", { "data-label": "When" }, h("time", { datetime: r.at }, when(r.at))),
    h("td", { "data-label": "Action" }, r.action),
    h("td", { "data-label": "Who" }, r.actor.id ? `${r.actor.kind} ${r.actor.id}` : r.actor.kind),
    h(
      "td",
      { "data-label": "What" },
      `${r.object.kind} ${r.object.id}`,
      r.numberHash ? h("span", { class: "sub" }, " (a number)") : null,
    ),
    h("td", { "data-label": "Door" }, r.door),
    h("td", { "data-label": "Client" }, r.client ?? ""),
    h("td", { "data-label": "Detail" }, detail),
  );
}

async function load(more) {
  const p = filterParams();
  if (more && next !== null) p.set("page", String(next));
  const { data } = await api("GET", `/api/admin/ledger?${p}`);
  const body = document.querySelector("#rows tbody");
  const rows = data.rows.map(rowOf);
  if (more) body.append(...rows);
  else body.replaceChildren(...rows);
  next = data.next;
  const pick = document.getElementById("action");
  // the gateway's own list of actions, filled once
  if (pick.options.length === 1) pick.append(...data.actions.map((a) => h("option", { value: a }, a)));
  document.getElementById("more").hidden = next === null;
  announce(
    body.children.length ? `${body.children.length} rows shown${next !== null ? ", more older" : ""}` : "No row found",
  );
  const ex = filterParams();
  for (const f of ["jsonl", "csv"]) {
    ex.set("format", f);
    document.getElementById(`export-${f}`).href = `/api/admin/ledger/export?${ex}`;
  }
  const shown = filterParams();
  shown.delete("number");
  history.replaceState(null, "", shown.size ? `?${shown}` : location.pathname);
}

const start = new URLSearchParams(location.search);
for (const k of FIELDS) if (k !== "number" && start.get(k)) document.getElementById(k).value = start.get(k);
document.getElementById("filter").addEventListener("submit", (e) => {
  e.preventDefault();
  load(false).catch((err) => announce(err.message, true));
});
document.getElementById("more").addEventListener("click", () => load(true).catch((err) => announce(err.message, true)));
await load(false).catch((err) => announce(err.message, true));
