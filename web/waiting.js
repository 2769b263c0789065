// "Waiting for you": print jobs that named no fax number, and faxes to a number never faxed
// before that wait for their owner's confirmation, listed first, oldest first (GET /api/waiting).
// On the list page, the user's own with a link to act; on the operator's queue page (data-all),
// everyone's, to see who has faxes waiting (an operator cannot act in the owner's place).
import { api, h, requireSession, when } from "./app.js";

function name(job) {
  return job.cover?.subject || job.documents?.[0]?.name || job.id;
}

/** Where the owner acts, and what the row says it waits for. */
function task(job) {
  return job.needsConfirmation
    ? {
        href: `/confirm.html?id=${encodeURIComponent(job.id)}`,
        action: "Confirm or cancel",
        why: `waits for you to confirm the new number ${job.newNumbers.join(", ")}`,
      }
    : { href: `/address.html?id=${encodeURIComponent(job.id)}`, action: "Give the number", why: "needs a fax number" };
}

async function show(section) {
  const all = section.dataset.all === "1";
  const { data } = await api("GET", `/api/waiting${all ? "?all=1" : ""}`);
  section.hidden = data.length === 0;
  const body = section.querySelector("tbody");
  body.replaceChildren(
    ...data.map((job) => {
      const t = task(job);
      return h(
        "tr",
        { "data-job": job.id },
        h("td", { "data-label": "Fax" }, all ? name(job) : h("a", { href: t.href }, name(job))),
        h("td", { "data-label": "Waits for" }, t.why),
        all ? h("td", { "data-label": "User" }, job.user) : null,
        h("td", { "data-label": "When" }, h("time", { datetime: job.createdAt }, when(job.createdAt))),
        all ? null : h("td", { "data-label": "Action" }, h("a", { class: "button", href: t.href }, t.action)),
      );
    }),
  );
}

const section = document.getElementById("waiting");
if (section) {
  await requireSession();
  await show(section).catch(() => {
    section.hidden = true;
  });
  // a look now and then (and when the tab comes back), not a second event stream per page:
  // the list's stream is the one the console allows a user
  setInterval(() => {
    if (!document.hidden) show(section).catch(() => {});
  }, 10_000);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) show(section).catch(() => {});
  });
}
