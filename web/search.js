// Search over the received and sent faxes the user may see (GET /api/search): ranked, each with
// the line of its text that matched; each opens its own page (the link the answer carries:
// inbound.html for a received fax, fax.html for a sent one).
import { announce, api, h, num, requireSession, when } from "./app.js";

const STATE = { new: "not taken", taken: "taken", done: "done" };
const FIELD = { text: "text", sender: "sender's number", dialled: "number dialled", csid: "CSID", note: "note" };
const sent = (r) => r.kind === "sent";
await requireSession();

async function search(ev) {
  ev?.preventDefault();
  const params = new URLSearchParams();
  for (const k of ["q", "from", "until", "state"]) {
    const v = document.getElementById(k).value.trim();
    if (v) params.set(k, v);
  }
  history.replaceState(null, "", `?${params}`);
  const { data } = await api("GET", `/api/search?${params}`);
  const table = document.getElementById("results");
  table.hidden = data.results.length === 0;
  announce(data.results.length ? `${data.results.length} faxes found` : "No fax found");
  table
    .querySelector("tbody")
    .replaceChildren(
      ...data.results.map((r) =>
        h(
          "tr",
          { "data-id": r.id },
          h(
            "td",
            { "data-label": "Fax" },
            h("span", { class: "sub" }, sent(r) ? "Sent to " : "From "),
            h("a", { href: r.link }, sent(r) ? r.to.join(", ") : (r.from ?? r.csid ?? "unknown")),
            !sent(r) && r.csid ? h("span", { class: "sub" }, ` ${r.csid}`) : null,
            r.line ? h("blockquote", { class: "hit" }, r.line) : null,
          ),
          h(
            "td",
            { "data-label": sent(r) ? "Sent" : "Received" },
            h("time", { datetime: sent(r) ? r.sentAt : r.receivedAt }, when(sent(r) ? r.sentAt : r.receivedAt)),
          ),
          h("td", { "data-label": "Pages" }, r.pages === null ? "" : num(r.pages)),
          h(
            "td",
            { "data-label": "State" },
            sent(r)
              ? h("span", { class: "badge" }, "sent")
              : h("span", { class: `badge r-${r.state}` }, STATE[r.state] ?? r.state),
          ),
          h("td", { "data-label": "Found in" }, r.matched.map((m) => FIELD[m] ?? m).join(", ")),
        ),
      ),
    );
}

const start = new URLSearchParams(location.search);
for (const k of ["q", "from", "until", "state"]) if (start.get(k)) document.getElementById(k).value = start.get(k);
document
  .getElementById("search")
  .addEventListener("submit", (e) => search(e).catch((err) => announce(err.message, true)));
if (start.get("q")) await search().catch((err) => announce(err.message, true));
