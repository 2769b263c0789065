import { announce, api, h, requireSession } from "./app.js";

const form = document.getElementById("send");
form.addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const fd = new FormData();
  for (const t of document
    .getElementById("to")
    .value.split(",")
    .map((s) => s.trim())
    .filter(Boolean))
    fd.append("to", t);
  fd.append("subject", document.getElementById("subject").value);
  fd.append("notes", document.getElementById("notes").value);
  if (document.getElementById("cover").checked) fd.append("cover", "on");
  for (const f of document.getElementById("files").files) fd.append("files", f, f.name);
  announce("Sending…");
  try {
    const { data } = await api("POST", "/api/faxes", fd);
    announce(`Queued as ${data.id}.`);
    location.assign(`/fax.html?id=${encodeURIComponent(data.id)}`);
  } catch (err) {
    announce(err.message, true);
  }
});

const pre = new URLSearchParams(location.search).get("to");
if (pre) document.getElementById("to").value = pre;

await requireSession();
api("GET", "/api/contacts").then(
  ({ data }) => {
    document
      .getElementById("contact-names")
      .replaceChildren(...data.filter((c) => c.faxNumber).map((c) => h("option", { value: c.name }, c.faxNumber)));
  },
  () => {},
);
