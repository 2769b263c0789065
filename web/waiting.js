// "Waiting for an address": print jobs that named no fax number, listed first, oldest first
// (GET /api/waiting). On the list page, the user's own with a link to give the number; on the
// operator's queue page (data-all), everyone's, to see who has prints waiting.
import { api, h, requireSession, when } from "./app.js";

function name(job) {
  return job.cover?.subject || job.documents?.[0]?.name || job.id;
}

async function show(section) {
  const all = section.dataset.all === "1";
  const { data } = await api("GET", `/api/waiting${all ? "?all=1" : ""}`);
  section.hidden = data.length === 0;
  const body = section.querySelector("tbody");
  body.replaceChildren(
    ...data.map((job) =>
      h(
        "tr",
        { "data-job": job.id },
        h(
          "td",
          { "data-label": "Printed" },
          all ? name(job) : h("a", { href: `/address.html?id=${encodeURIComponent(job.id)}` }, name(job)),
        ),
        all ? h("td", { "data-label": "User" }, job.user) : null,
        h("td", { "data-label": "When" }, h("time", { datetime: job.createdAt }, when(job.createdAt))),
        all
          ? null
          : h(
              "td",
              { "data-label": "Action" },
              h("a", { class: "button", href: `/address.html?id=${encodeURIComponent(job.id)}` }, "Give the number"),
            ),
      ),
    ),
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
