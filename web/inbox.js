import { announce, api, h, num, requireSession, when } from "./app.js";
import { renderPdf } from "./preview.js";

const STATE = { new: "not taken", taken: "taken", done: "done" };
const ACTION = {
  stored: "received",
  routed: "routed",
  taken: "taken",
  released: "given back",
  done: "done",
  note: "note",
  forwarded: "forwarded",
  escalated: "sent again (not taken)",
};
let current = new URLSearchParams(location.search).get("id");
const me = await requireSession();

async function list() {
  const show = document.getElementById("show").value;
  const { data } = await api("GET", `/api/inbox${show ? `?state=${show}` : ""}`);
  document.getElementById("groups").textContent = data.groups.length
    ? `Groups: ${data.groups.join(", ")}`
    : "You are in no group with a shared inbox.";
  document.querySelector("#faxes tbody").replaceChildren(
    ...data.faxes.map((f) =>
      h(
        "tr",
        { "data-id": f.id, class: f.id === current ? "selected" : null },
        h(
          "td",
          { "data-label": "From" },
          h(
            "a",
            {
              href: `?id=${encodeURIComponent(f.id)}`,
              onclick: (e) => {
                e.preventDefault();
                open(f.id);
              },
            },
            f.from ?? f.csid ?? "unknown",
          ),
          f.csid ? h("span", { class: "sub" }, ` ${f.csid}`) : null,
        ),
        h("td", { "data-label": "Number dialled" }, f.dialled ?? ""),
        h("td", { "data-label": "Pages" }, num(f.pages)),
        h("td", { "data-label": "Received" }, h("time", { datetime: f.receivedAt }, when(f.receivedAt))),
        h("td", { "data-label": "State" }, h("span", { class: `badge r-${f.state}` }, STATE[f.state] ?? f.state)),
        h("td", { "data-label": "Owner" }, f.owner ?? ""),
      ),
    ),
  );
}

async function open(id) {
  current = id;
  history.replaceState(null, "", `?id=${encodeURIComponent(id)}`);
  const { data: f } = await api("GET", `/api/inbox/${encodeURIComponent(id)}`);
  const box = document.getElementById("detail");
  box.hidden = false;
  document.getElementById("detail-h").textContent =
    `Fax from ${f.from ?? f.csid ?? "unknown"}${f.pages ? `, ${f.pages} pages` : ""}`;
  const act = (op, label) => h("button", { type: "button", "data-op": op, onclick: () => run(op) }, label);
  document
    .getElementById("actions")
    .replaceChildren(
      ...[
        h(
          "span",
          { class: `badge r-${f.state}`, id: "state" },
          f.owner ? `${STATE[f.state]} by ${f.owner}` : STATE[f.state],
        ),
        f.state === "new" ? act("take", "Take it") : null,
        f.state === "taken" && f.owner === me.user ? act("release", "Give back") : null,
        f.state !== "done" ? act("done", "Done") : null,
      ].filter(Boolean),
    );
  document.getElementById("note").value = f.note ?? "";
  const url = `/api/inbox/${encodeURIComponent(id)}/pdf`;
  document.getElementById("download").href = `${url}?download=1`;
  document
    .getElementById("timeline")
    .replaceChildren(
      ...f.timeline.map((e) =>
        h(
          "li",
          {},
          h("time", { datetime: e.at }, when(e.at)),
          " ",
          ACTION[e.action] ?? e.action,
          e.actor ? ` by ${e.actor}` : "",
          e.detail ? h("span", { class: "sub" }, ` — ${e.detail}`) : null,
        ),
      ),
    );
  await list();
  if (f.hasDocument)
    await renderPdf(document.getElementById("preview"), url, "Received fax").catch((err) =>
      announce(`The preview failed: ${err.message}`, true),
    );
  else document.getElementById("preview").replaceChildren(h("p", {}, "This fax has no document."));
}

async function run(op, body) {
  try {
    await api("POST", `/api/inbox/${encodeURIComponent(current)}/${op}`, body ?? {});
    announce(
      {
        take: "You have taken this fax.",
        release: "Given back to the group.",
        done: "Marked done.",
        note: "Note saved.",
        forward: "Forwarded.",
      }[op],
    );
    await open(current);
  } catch (err) {
    announce(err.message, true);
    await open(current).catch(() => {});
  }
}

document.getElementById("show").addEventListener("change", () => list().catch((e) => announce(e.message, true)));
document.getElementById("note-form").addEventListener("submit", (e) => {
  e.preventDefault();
  run("note", { note: document.getElementById("note").value });
});
document.getElementById("forward-fax").addEventListener("submit", (e) => {
  e.preventDefault();
  run("forward", { to: document.getElementById("forward-to").value });
});
document.getElementById("forward-mail").addEventListener("submit", (e) => {
  e.preventDefault();
  run("forward", { user: document.getElementById("forward-user").value });
});
await list().catch((e) => announce(e.message, true));
if (current)
  await open(current).catch((e) =>
    announce(e.status === 404 ? "There is no such fax in your inboxes." : e.message, true),
  );
