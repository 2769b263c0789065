// A fax to a number its owner never faxed before (docs/mx.md, How confirmNewDestinations looks
// to the user): the pages' preview, the new numbers, and Confirm (POST /api/jobs/:id/confirm) or
// Cancel (POST /api/jobs/:id/cancel). Reached from the "confirm" mail; sign-in comes first.
import { announce, api, h, requireSession, subjectOf, when } from "./app.js";
import { renderPdf } from "./preview.js";

const id = new URLSearchParams(location.search).get("id") ?? "";
const box = document.getElementById("confirm");
const lead = document.getElementById("lead");

function done(text, job) {
  box.hidden = true;
  lead.replaceChildren(`${text} `, h("a", { href: `/fax.html?id=${encodeURIComponent(job.id)}` }, "See the fax"));
}

await requireSession();
let job;
try {
  ({ data: job } = await api("GET", `/api/jobs/${encodeURIComponent(id)}/confirmation`));
} catch (err) {
  document.getElementById("title").textContent = "No such fax";
  box.hidden = true;
  announce(err.message, true);
}
if (job) {
  const name = subjectOf(job);
  document.getElementById("title").textContent = `Confirm a fax to a new number: ${name}`;
  if (!job.needsConfirmation) {
    done("This fax is not waiting for confirmation any more.", job);
  } else {
    document.getElementById("new-numbers").replaceChildren(...job.newNumbers.map((n) => h("li", {}, n)));
    if (job.otherNumbers.length) {
      const others = document.getElementById("others");
      others.hidden = false;
      others.textContent = `It also goes to numbers you faxed before: ${job.otherNumbers.join(", ")}.`;
    }
    document.getElementById("expires").textContent =
      `Received ${when(job.createdAt)}. Not sent unless you confirm by ${when(job.confirmBy)}; then it is cancelled.`;
  }
  const first = job.documents.findIndex((d) => d.contentType === "application/pdf");
  if (first >= 0) {
    renderPdf(
      document.getElementById("preview"),
      `/api/jobs/${encodeURIComponent(job.id)}/documents/${first}`,
      job.documents[first].name,
    ).catch((err) => announce(`The preview failed: ${err.message}`, true));
  } else if (job.documents[0]) {
    document
      .getElementById("preview")
      .replaceChildren(h("p", {}, `${job.documents[0].name} (no preview for this type)`));
  }
}

async function act(path, wording) {
  announce(wording);
  for (const b of box.querySelectorAll("button")) b.disabled = true;
  try {
    const { data } = await api("POST", `/api/jobs/${encodeURIComponent(id)}/${path}`);
    if (path === "confirm")
      done(
        data.alreadyConfirmed ? "This fax was already confirmed: it is sent once." : "Confirmed: the fax is queued.",
        data,
      );
    else done("Cancelled: the fax was not sent.", data);
    announce("");
  } catch (err) {
    for (const b of box.querySelectorAll("button")) b.disabled = false;
    announce(err.message, true);
  }
}

document.getElementById("yes").addEventListener("click", () => act("confirm", "Confirming…"));
document.getElementById("no").addEventListener("click", () => act("cancel", "Cancelling…"));
