import { announce, requireSession } from "./app.js";
import { renderPdf } from "./preview.js";

const id = new URLSearchParams(location.search).get("id") ?? "";
const url = `/api/inbound/${encodeURIComponent(id)}/pdf`;
document.getElementById("download").href = `${url}?download=1`;

await requireSession();
renderPdf(document.getElementById("preview"), url, "Received fax").catch((err) =>
  announce(
    /Missing PDF|404|Unexpected server response/i.test(err.message)
      ? "There is no received fax with this id among yours."
      : `The preview failed: ${err.message}`,
    true,
  ),
);
