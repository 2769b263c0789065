// The one page of a received fax, for every way in (a mailed link, the shared inbox, the list of
// received faxes): the facts the mail gives, the route it took, its timeline and its document;
// for a member of its group inbox also take it, done, a note and forward.
import { announce, api, h, requireSession, when } from "./app.js";
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
  "reply to": "reply to",
  "reply code": "reply code",
};
const id = new URLSearchParams(location.search).get("id") ?? "";
const me = await requireSession();

function facts(f) {
  const rows = [
    ["From", f.from],
    ["Sender CSID", f.csid],
    ["Number dialled", f.dialled],
    ["Received", f.receivedAt ? h("time", { datetime: f.receivedAt }, when(f.receivedAt)) : null],
    ["Pages", f.pagesText],
    ["Reception", f.status === "failed" ? "failed" : null],
    ["Received by", f.user],
    ["Route", f.route || null],
    ["Shared inbox", f.groups.length ? f.groups.join(", ") : null],
    ["Message id", f.messageId],
  ].filter(([, v]) => v);
  const dl = document.getElementById("facts");
  dl.replaceChildren(...rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
  dl.hidden = false;
}

async function load() {
  const { data: f } = await api("GET", `/api/received/${encodeURIComponent(id)}`);
  const who = f.from ?? f.csid ?? "an unknown sender";
  document.getElementById("title").textContent = `Fax from ${who}`;
  document.title = `Fax from ${who} · faxgate`;
  facts(f);
  const box = document.getElementById("inbox");
  box.hidden = !f.canAct;
  if (f.canAct) {
    const act = (op, label) => h("button", { type: "button", "data-op": op, onclick: () => run(f, op) }, label);
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
  }
  document.getElementById("history").hidden = false;
  document.getElementById("timeline").replaceChildren(
    ...f.timeline.map((e) =>
      h(
        "li",
        {},
        h("time", { datetime: e.at }, when(e.at)),
        " ",
        ACTION[e.action] ?? e.action,
        e.actor ? ` by ${e.actor}` : "",
        // the sent fax it answers (issue 51): a link to that job's page
        e.action === "reply to"
          ? h(
              "span",
              { class: "sub" },
              " — ",
              h("a", { href: `/fax.html?id=${encodeURIComponent(e.detail ?? "")}` }, "your fax"),
            )
          : e.detail
            ? h("span", { class: "sub" }, ` — ${e.detail}`)
            : null,
      ),
    ),
  );
  const dl = f.deliveries ?? [];
  document.getElementById("dl-h").hidden = dl.length === 0;
  document.getElementById("deliveries").replaceChildren(
    ...dl.map((d) =>
      h(
        "li",
        {},
        `${d.target}: `,
        { pending: "waiting", delivering: "being delivered", delivered: "delivered", failed: "not delivered" }[
          d.state
        ] ?? d.state,
        d.state === "delivered" && d.result ? h("span", { class: "sub" }, ` — ${d.result}`) : null,
        d.lastError && d.state !== "delivered" ? h("span", { class: "sub" }, ` — ${d.lastError}`) : null,
        d.canRetry
          ? h(
              "button",
              {
                type: "button",
                onclick: async () => {
                  try {
                    await api(
                      "POST",
                      `/api/received/${encodeURIComponent(f.id)}/deliveries/${encodeURIComponent(d.id)}/again`,
                      {},
                    );
                    announce("It will be delivered again shortly.");
                    await load();
                  } catch (err) {
                    announce(err.message, true);
                  }
                },
              },
              "Deliver again",
            )
          : null,
      ),
    ),
  );
  return f;
}

async function preview(f) {
  const url = `/api/received/${encodeURIComponent(f.id)}/pdf`;
  const link = document.getElementById("download");
  link.hidden = !f.hasDocument;
  link.href = `${url}?download=1`;
  if (!f.hasDocument) {
    document.getElementById("preview").replaceChildren(h("p", {}, "This fax has no document."));
    return;
  }
  await renderPdf(document.getElementById("preview"), url, "Received fax").catch((err) =>
    announce(`The preview failed: ${err.message}`, true),
  );
}

async function run(f, op, body) {
  try {
    await api("POST", `/api/inbox/${encodeURIComponent(f.id)}/${op}`, body ?? {});
    announce(
      {
        take: "You have taken this fax.",
        release: "Given back to the group.",
        done: "Marked done.",
        note: "Note saved.",
        forward: "Forwarded.",
      }[op],
    );
  } catch (err) {
    announce(err.message, true);
  }
  await load().catch(() => {});
}

/** A fax the gateway did not keep (received before it kept them): its document, by the user's own key. */
async function notKept() {
  const url = `/api/inbound/${encodeURIComponent(id)}/pdf`;
  document.getElementById("download").href = `${url}?download=1`;
  await renderPdf(document.getElementById("preview"), url, "Received fax").catch((err) =>
    announce(
      /Missing PDF|404|Unexpected server response/i.test(err.message)
        ? "There is no received fax with this id among the ones you may see."
        : `The preview failed: ${err.message}`,
      true,
    ),
  );
}

let shown = null;
try {
  shown = await load();
} catch (err) {
  if (err.status !== 404) announce(err.message, true);
}
if (shown) {
  const f = shown;
  const on = (form, what) =>
    document.getElementById(form).addEventListener("submit", (e) => {
      e.preventDefault();
      run(f, what[0], what[1]());
    });
  on("note-form", ["note", () => ({ note: document.getElementById("note").value })]);
  on("forward-fax", ["forward", () => ({ to: document.getElementById("forward-to").value })]);
  on("forward-mail", ["forward", () => ({ user: document.getElementById("forward-user").value })]);
  await preview(f);
} else await notKept();
