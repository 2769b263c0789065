import { announce, api, h, num, requireSession, stateBadge, subjectOf, when } from "./app.js";

const PAGE = 25;
let offset = 0;
let search = "";
let total = 0;
const rows = new Map();

function recipientsText(job) {
  // a print waiting for its owner's number has no number yet (waiting.js lists it first)
  return job.recipients
    .map((r) => (!r.number ? "needs a number" : r.name ? `${r.name} (${r.numberText})` : r.numberText))
    .join(", ");
}

function row(job) {
  return h(
    "tr",
    { "data-job": job.id },
    h(
      "td",
      { "data-label": "Subject" },
      h("a", { href: `/fax.html?id=${encodeURIComponent(job.id)}` }, subjectOf(job)),
    ),
    h("td", { "data-label": "To" }, recipientsText(job)),
    h(
      "td",
      { "data-label": "State", class: "state" },
      stateBadge(job.state),
      job.recipients.length > 1
        ? h("span", { class: "sub" }, " ", job.recipients.map((r) => r.state).join(", "))
        : null,
    ),
    h("td", { "data-label": "Queued" }, h("time", { datetime: job.createdAt }, when(job.createdAt))),
  );
}

async function load() {
  const q = new URLSearchParams({ limit: String(PAGE), offset: String(offset) });
  if (search) q.set("search", search);
  const { data, headers } = await api("GET", `/api/jobs?${q}`);
  total = Number(headers.get("x-total-count") ?? data.length);
  const body = document.querySelector("#jobs tbody");
  rows.clear();
  body.replaceChildren(
    ...data.map((j) => {
      const r = row(j);
      rows.set(j.id, r);
      return r;
    }),
  );
  if (data.length === 0)
    body.append(h("tr", { class: "empty" }, h("td", { colspan: 4 }, search ? "No fax matches." : "No faxes yet.")));
  document.getElementById("pageinfo").textContent = total
    ? `${num(offset + 1)}–${num(offset + data.length)} of ${num(total)}`
    : "";
  document.getElementById("prev").disabled = offset === 0;
  document.getElementById("next").disabled = offset + PAGE >= total;
}

async function loadInbound() {
  const body = document.querySelector("#inbound tbody");
  try {
    const { data } = await api("GET", "/api/inbound?limit=10");
    body.replaceChildren(
      ...data.faxes.map((f) =>
        h(
          "tr",
          {},
          h("td", { "data-label": "From" }, f.from ?? "unknown"),
          h("td", { "data-label": "Pages" }, num(f.pages)),
          h("td", { "data-label": "Received" }, when(f.receivedAt)),
          h(
            "td",
            { "data-label": "Document" },
            h("a", { href: `/inbound.html?id=${encodeURIComponent(f.messageId)}` }, "Preview"),
            " ",
            h("a", { href: `/api/inbound/${encodeURIComponent(f.messageId)}/pdf?download=1` }, "Download PDF"),
          ),
        ),
      ),
    );
    if (data.faxes.length === 0) body.append(h("tr", {}, h("td", { colspan: 4 }, "No faxes received.")));
  } catch (err) {
    body.replaceChildren(h("tr", {}, h("td", { colspan: 4 }, `Received faxes cannot be shown now: ${err.message}`)));
  }
}

function live() {
  const es = new EventSource("/api/events");
  // A change made between the first look and the stream's start (or while it reconnected) has no
  // event of its own: look again each time the stream opens.
  es.addEventListener("open", () => load().catch((e) => announce(e.message, true)));
  es.addEventListener("job", (ev) => {
    const job = JSON.parse(ev.data);
    const old = rows.get(job.id);
    if (old) {
      const fresh = row(job);
      old.replaceWith(fresh);
      rows.set(job.id, fresh);
      announce(`${subjectOf(job)}: ${fresh.querySelector(".badge").textContent}`);
    } else if (offset === 0 && !search) {
      const fresh = row(job);
      document.querySelector("#jobs tbody tr.empty")?.remove();
      document.querySelector("#jobs tbody").prepend(fresh);
      rows.set(job.id, fresh);
      total += 1;
      document.getElementById("pageinfo").textContent = `1–${num(rows.size)} of ${num(total)}`;
      announce(`New fax: ${subjectOf(job)}`);
    }
  });
}

document.getElementById("search").addEventListener("submit", (ev) => {
  ev.preventDefault();
  search = document.getElementById("q").value.trim();
  offset = 0;
  load().then(
    () => announce(search ? `${num(total)} found` : ""),
    (e) => announce(e.message, true),
  );
});
document.getElementById("prev").addEventListener("click", () => {
  offset = Math.max(0, offset - PAGE);
  load().catch((e) => announce(e.message, true));
});
document.getElementById("next").addEventListener("click", () => {
  offset += PAGE;
  load().catch((e) => announce(e.message, true));
});

await requireSession();
await load().catch((e) => announce(e.message, true));
live();
void loadInbound();
