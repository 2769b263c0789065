import {
  announce,
  api,
  h,
  localTimes,
  num,
  requireSession,
  size,
  stateBadge,
  STATE_WORDS,
  subjectOf,
  when,
} from "./app.js";
import { renderPdf } from "./preview.js";

const id = new URLSearchParams(location.search).get("id") ?? "";
const base = `/api/jobs/${encodeURIComponent(id)}`;
let job = null;

const TRANSITION_WORDS = {
  enqueue: "Accepted by the gateway",
  claim: "Being sent",
  accept: "Taken by the fax service",
  defer: "Will be tried again",
  deliver: "Delivered",
  delivered: "Delivered",
  fail: "Failed",
  failed: "Failed",
  cancel: "Cancelled",
  cancelled: "Cancelled",
  hold: "Put on hold",
  held: "On hold",
  release: "Released",
  retry: "Retried by an operator",
  unknown: "Outcome being checked with the service",
  progress: "Being faxed",
  reply: "Reply received",
};

/**
 * The service's progress ("page 0 of 2, attempt 0": pages sent so far, and its own count of dial
 * attempts, 0 before the first) as pages sent. How often the number was dialled is the Tries
 * column's to say, counted once for the gateway's sends and the service's redials alike.
 */
function progressWords(detail) {
  const m = /^(?:page (\d+)(?: of (\d+))?)?(?:, )?(?:attempt \d+)?$/.exec(detail ?? "");
  if (!m) return detail;
  const [, sent, of] = m;
  if (sent === undefined) return null;
  return of !== undefined ? `${num(+sent)} of ${num(+of)} pages sent` : `${num(+sent)} pages sent`;
}

function render() {
  document.title = `${subjectOf(job)} · faxgate`;
  document.getElementById("title").textContent = subjectOf(job);
  // files the sender attached that the fax went without (intake.partial: send) come first
  const without = (job.leftOut ?? []).filter((l) => l.sentWithout).map((l) => l.name);
  const warn = document.getElementById("without");
  warn.hidden = without.length === 0;
  warn.textContent = without.length
    ? `Sent without ${without.join(", ")}: ${without.length > 1 ? "these files" : "this file"} could not be faxed.`
    : "";
  document
    .getElementById("summary")
    .replaceChildren(
      stateBadge(job.state),
      ` queued ${when(job.createdAt)}`,
      job.cover?.enabled ? ", with a cover page" : "",
    );
  document.getElementById("left-out-box").hidden = !(job.leftOut ?? []).length;
  document
    .getElementById("left-out")
    .replaceChildren(...(job.leftOut ?? []).map((l) => h("li", {}, `${l.name}: ${l.reason}`)));
  document.querySelector("#recipients tbody").replaceChildren(
    ...job.recipients.map((r) =>
      h(
        "tr",
        {},
        h(
          "td",
          { "data-label": "To" },
          job.needsAddress
            ? h("a", { href: `/address.html?id=${encodeURIComponent(job.id)}` }, "Give the number")
            : r.name
              ? `${r.name} (${r.numberText ?? r.number})`
              : (r.numberText ?? r.number),
        ),
        h(
          "td",
          { "data-label": "State" },
          // the words every surface uses (job-json.ts needsNumber); the link is in the To column
          job.needsAddress ? h("span", { class: "badge s-held" }, "needs a number") : stateBadge(r.state),
          r.waiting && !job.needsAddress ? h("span", { class: "sub" }, ` ${localTimes(r.waiting)}`) : null,
        ),
        h("td", { "data-label": "Tries" }, num(r.attempts)),
        h("td", { "data-label": "Result" }, localTimes(r.errorInfo ?? r.lastError ?? r.resultInfo ?? "")),
      ),
    ),
  );
  const states = new Set(job.recipients.map((r) => r.state));
  const can = {
    // a parked send (unknown, not to be sent again by itself) may be closed by its owner
    cancel:
      ["queued", "deferred", "held"].some((s) => states.has(s)) ||
      job.recipients.some((r) => r.state === "unknown" && /^parked:/.test(r.lastError ?? "")),
    hold: ["queued", "deferred"].some((s) => states.has(s)),
    // a print waiting for its number is sent by giving it one, not by a release
    release: states.has("held") && !job.needsAddress,
  };
  const label = { cancel: "Cancel", hold: "Hold", release: "Release" };
  document.getElementById("actions").replaceChildren(
    ...Object.entries(can)
      .filter(([, ok]) => ok)
      .map(([op]) => h("button", { type: "button", "data-op": op, onclick: () => act(op) }, label[op])),
  );
  document
    .getElementById("documents")
    .replaceChildren(
      ...job.documents.map((d, i) =>
        h(
          "li",
          {},
          `${d.name} (${size(d.bytes)}) `,
          h("a", { href: `${base}/documents/${i}?download=1` }, "Download"),
          " ",
          h("button", { type: "button", class: "link", onclick: () => preview(i) }, "Preview"),
        ),
      ),
    );
  document.getElementById("report").href = `${base}/report?download=1`;
  // evidence proves what the service took: only once a recipient has its message id
  document.getElementById("evidence-box").hidden = !job.recipients.some((r) => r.messageId);
  document.getElementById("timeline").replaceChildren(
    ...(job.timeline ?? []).map((e) => {
      // a reply's step names the received fax: a link to its page (issue 51)
      const detail =
        e.transition === "reply"
          ? h("a", { href: `/inbound.html?id=${encodeURIComponent(e.detail ?? "")}` }, "open the reply")
          : e.transition === "progress"
            ? progressWords(e.detail)
            : localTimes(e.detail);
      return h(
        "li",
        {},
        h("time", { datetime: e.at }, when(e.at)),
        " ",
        e.idx !== null && job.recipients[e.idx] ? `${job.recipients[e.idx].number}: ` : "",
        TRANSITION_WORDS[e.transition] ?? STATE_WORDS[e.to] ?? e.transition,
        detail ? h("span", { class: "sub" }, " — ", detail) : null,
      );
    }),
  );
}

async function load() {
  try {
    job = (await api("GET", base)).data;
  } catch (err) {
    document.getElementById("title").textContent = err.status === 404 ? "No such fax" : "Fax";
    announce(err.status === 404 ? "There is no fax with this id among yours." : err.message, true);
    return false;
  }
  document.getElementById("fax").hidden = false;
  render();
  return true;
}

// what cannot be taken back is asked once more (hold and release can be undone)
const CONFIRM = { cancel: "Cancel this fax? It will not be sent." };

async function act(op) {
  if (CONFIRM[op] && !confirm(CONFIRM[op])) return;
  try {
    await api("POST", `${base}/${op}`);
    await load();
    announce(`Done: ${op}.`);
  } catch (err) {
    announce(err.message, true);
  }
}

async function preview(i) {
  const d = job.documents[i];
  const box = document.getElementById("preview");
  const url = `${base}/documents/${i}`;
  if (d.contentType.startsWith("image/") && d.contentType !== "image/tiff") {
    box.replaceChildren(h("img", { src: url, alt: `Page of ${d.name}` }));
    return;
  }
  if (d.contentType !== "application/pdf") {
    box.replaceChildren(h("p", {}, `${d.name} cannot be shown here; download it instead.`));
    return;
  }
  await renderPdf(box, url, d.name);
}

/** The signed bundle, made on the server (a ledger row each time) and saved under its own name. */
async function downloadEvidence() {
  const button = document.getElementById("evidence");
  button.disabled = true;
  announce("Making the evidence bundle…");
  try {
    const r = await fetch(`${base}/evidence`, {
      method: "POST",
      headers: { "x-csrf-token": session?.csrfToken ?? "" },
      credentials: "same-origin",
    });
    if (!r.ok) {
      const body = r.headers.get("content-type")?.includes("json") ? await r.json() : null;
      throw new Error(body?.error ?? `${r.status} ${r.statusText}`);
    }
    const name = /filename="([^"]+)"/.exec(r.headers.get("content-disposition") ?? "")?.[1] ?? `evidence-${id}.zip`;
    const url = URL.createObjectURL(await r.blob());
    const a = h("a", { href: url, download: name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
    announce(`Evidence bundle saved as ${name}.`);
  } catch (err) {
    announce(`No evidence bundle: ${err.message}`, true);
  } finally {
    button.disabled = false;
  }
}
document.getElementById("evidence").addEventListener("click", () => void downloadEvidence());

document.getElementById("resend").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const to = document
    .getElementById("resend-to")
    .value.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (!confirm(`Send this fax again to ${to.length ? to.join(", ") : "the same recipients"}?`)) return;
  try {
    const { data } = await api("POST", `${base}/resend`, to.length ? { to } : {});
    announce("Queued again as a new fax.");
    location.assign(`/fax.html?id=${encodeURIComponent(data.id)}`);
  } catch (err) {
    announce(err.message, true);
  }
});

const session = await requireSession();
if (await load()) {
  const es = new EventSource("/api/events");
  // A change made between the first look and the stream's start (or while it reconnected) has no
  // event of its own: look again each time the stream opens.
  es.addEventListener("open", () => void load());
  es.addEventListener("job", (ev) => {
    if (JSON.parse(ev.data).id === id) load().then(() => announce(`Now: ${STATE_WORDS[job.state] ?? job.state}`));
  });
  api("GET", "/api/contacts").then(
    ({ data }) => {
      document
        .getElementById("contact-names")
        .replaceChildren(...data.filter((c) => c.faxNumber).map((c) => h("option", { value: c.name })));
    },
    () => {},
  );
  const firstPdf = job.documents.findIndex((d) => d.contentType === "application/pdf");
  if (firstPdf >= 0) preview(firstPdf).catch((err) => announce(`The preview failed: ${err.message}`, true));
}
