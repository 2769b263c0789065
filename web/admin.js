import { announce, api, h, num, requireSession, stateBadge, STATE_WORDS, subjectOf, when } from "./app.js";

function age(seconds) {
  if (seconds === null || seconds === undefined) return "none waiting";
  if (seconds < 120) return `${num(Math.round(seconds))} s`;
  if (seconds < 7200) return `${num(Math.round(seconds / 60))} min`;
  return `${num(Math.round(seconds / 3600))} h`;
}

function jobTable(title, jobs) {
  if (jobs.length === 0) return null;
  return h(
    "div",
    {},
    h("h3", {}, `${title} (${num(jobs.length)})`),
    h(
      "table",
      { class: "list" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", { scope: "col" }, "Fax"),
          h("th", { scope: "col" }, "User"),
          h("th", { scope: "col" }, "To"),
          h("th", { scope: "col" }, "Since"),
          h("th", { scope: "col" }, "Actions"),
        ),
      ),
      h(
        "tbody",
        {},
        ...jobs.map((j) =>
          h(
            "tr",
            {},
            h(
              "td",
              { "data-label": "Fax" },
              h("a", { href: `/fax.html?id=${encodeURIComponent(j.id)}` }, subjectOf(j)),
              " ",
              stateBadge(j.state),
            ),
            h("td", { "data-label": "User" }, j.user),
            h(
              "td",
              { "data-label": "To" },
              j.recipients.map((r) => `${r.numberText ?? r.number} ${STATE_WORDS[r.state] ?? r.state}`).join(", "),
            ),
            h("td", { "data-label": "Since" }, when(j.updatedAt)),
            h(
              "td",
              { "data-label": "Actions", class: "actions" },
              ...["retry", "cancel", "hold", "release"].map((op) =>
                h("button", { type: "button", onclick: () => act(j.id, op) }, op),
              ),
            ),
          ),
        ),
      ),
    ),
  );
}

async function act(id, op) {
  try {
    await api("POST", `/api/jobs/${encodeURIComponent(id)}/${op}`);
    announce(`${id}: ${op} done.`);
    await load();
  } catch (err) {
    announce(err.message, true);
  }
}

async function load() {
  const { data } = await api("GET", "/api/admin/overview");
  const q = data.queue;
  document
    .getElementById("counts")
    .replaceChildren(
      ...Object.entries(q.jobs).flatMap(([s, n]) => [h("dt", {}, STATE_WORDS[s] ?? s), h("dd", {}, num(n))]),
      h("dt", {}, "oldest waiting"),
      h("dd", {}, age(q.oldestActiveAgeSeconds)),
    );
  document
    .getElementById("service")
    .replaceChildren(
      h("li", {}, `Status: ${data.service.status === "ok" ? "reachable, keys working" : "NOT ready"}`),
      ...Object.entries(data.service.checks).map(([k, c]) =>
        h("li", {}, `${k}: ${c.ok ? "ok" : "failing"}${c.detail ? ` — ${c.detail}` : ""}`),
      ),
      h(
        "li",
        {},
        `History budget: ${data.service.historyBudgetAvailable ? "available" : "used up for the moment (rate limited)"}`,
      ),
      ...data.keysRefused.map((k) =>
        h("li", { class: "error" }, `Key of ${k.user} refused since ${when(k.since)}: ${k.reason}`),
      ),
      ...(data.keyExpiry ?? []).map((k) =>
        h(
          "li",
          {},
          `Key of ${k.user}: ${k.expiresAt ? `expires ${when(k.expiresAt)}` : "does not expire"} (checked ${when(k.checkedAt)})`,
        ),
      ),
    );
  const att = [
    jobTable("Held", data.held),
    jobTable("Outcome unknown", data.unknown),
    jobTable("Stuck", data.stuck),
  ].filter(Boolean);
  document
    .getElementById("attention")
    .replaceChildren(...(att.length ? att : [h("p", {}, "Nothing needs attention.")]));
  document
    .querySelector("#refusals tbody")
    .replaceChildren(
      ...(data.refusals.length
        ? data.refusals.map((r) =>
            h(
              "tr",
              {},
              h("td", { "data-label": "When" }, when(r.at)),
              h("td", { "data-label": "Where" }, r.source),
              h("td", { "data-label": "User" }, r.user ?? ""),
              h("td", { "data-label": "Reason" }, r.reason),
            ),
          )
        : [h("tr", {}, h("td", { colspan: 4 }, "No refusals since the gateway started."))]),
    );
  document
    .querySelector("#volume tbody")
    .replaceChildren(
      ...data.volume24h.map((v) =>
        h(
          "tr",
          {},
          h("td", { "data-label": "User" }, v.user),
          h("td", { "data-label": "Faxes" }, num(v.jobs)),
          h("td", { "data-label": "Numbers" }, num(v.recipients)),
          h("td", { "data-label": "Delivered" }, num(v.delivered)),
          h("td", { "data-label": "Failed" }, num(v.failed)),
          h("td", { "data-label": "Pages" }, num(v.pages)),
        ),
      ),
    );
}

const s = await requireSession();
if (!s.admin) {
  // one sentence instead of a page of empty tables
  for (const el of document.querySelectorAll("main > section")) el.hidden = true;
  announce(
    "This page shows the whole gateway's queue and is for operators only; your own faxes are under My faxes.",
    true,
  );
} else await load().catch((err) => announce(err.message, true));
