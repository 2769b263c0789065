// A print job waiting for an address (docs/console.md, Waiting for an address): the pages'
// preview, the number typed or picked from the contacts, cover and subject; sent through the
// same checks as a new fax (POST /api/jobs/:id/address).
import { announce, api, h, requireSession, when } from "./app.js";
import { renderPdf } from "./preview.js";

const id = new URLSearchParams(location.search).get("id") ?? "";
const form = document.getElementById("address");

await requireSession();
let job;
try {
  ({ data: job } = await api("GET", `/api/jobs/${encodeURIComponent(id)}`));
} catch (err) {
  document.getElementById("title").textContent = "No such print job";
  form.hidden = true;
  announce(err.message, true);
}
if (job) {
  const name = job.cover?.subject || job.documents?.[0]?.name || job.id;
  document.getElementById("title").textContent = `Give the fax number: ${name}`;
  document.getElementById("subject").value = job.cover?.subject ?? "";
  if (job.state !== "held" || job.recipients.some((r) => r.number)) {
    form.hidden = true;
    document
      .getElementById("lead")
      .replaceChildren(
        "This print job is not waiting for a number any more. ",
        h("a", { href: `/fax.html?id=${encodeURIComponent(job.id)}` }, "See the fax"),
      );
  } else {
    document.getElementById("expires").textContent =
      `Printed ${when(job.createdAt)}. Not sent until you give the number.`;
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

api("GET", "/api/contacts").then(
  ({ data }) => {
    const withFax = data.filter((c) => c.faxNumber);
    document
      .getElementById("contact-names")
      .replaceChildren(...withFax.map((c) => h("option", { value: c.name }, c.faxNumber)));
    document
      .getElementById("pick")
      .append(...withFax.map((c) => h("option", { value: c.name }, `${c.name} (${c.faxNumber})`)));
  },
  () => {},
);

document.getElementById("pick").addEventListener("change", (ev) => {
  const v = ev.target.value;
  if (!v) return;
  const to = document.getElementById("to");
  const have = to.value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (!have.includes(v)) to.value = [...have, v].join(", ");
  ev.target.value = "";
});

// a refusal shown stays only until the form is changed
form.addEventListener("input", () => announce(""));

form.addEventListener("submit", async (ev) => {
  ev.preventDefault();
  announce("Sending…");
  try {
    const { data } = await api("POST", `/api/jobs/${encodeURIComponent(id)}/address`, {
      to: document
        .getElementById("to")
        .value.split(",")
        .map((s) => s.trim())
        .filter(Boolean),
      subject: document.getElementById("subject").value,
      notes: document.getElementById("notes").value,
      cover: document.getElementById("cover").checked,
    });
    announce(`Queued: ${data.id}.`);
    location.assign(`/fax.html?id=${encodeURIComponent(data.id)}`);
  } catch (err) {
    announce(err.message, true);
  }
});
