// The fax PDF to attach, streamed by the client into a private temp folder under the data folder
// (never held in memory), and removed once the mail is handed over.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import path from "node:path";
import type { FaxApi } from "../fax/index.js";

export interface DownloadedFax {
  path: string;
  filename: string;
  bytes: number;
  /** Removes the temp folder; safe to call twice. */
  remove(): Promise<void>;
}

export async function downloadToTemp(
  client: FaxApi,
  messageId: string,
  dataDir: string,
  fallbackName: string,
): Promise<DownloadedFax> {
  const root = path.join(dataDir, "tmp", "notify");
  await mkdir(root, { recursive: true, mode: 0o750 });
  const dir = await mkdtemp(path.join(root, "fax-"));
  const remove = () => rm(dir, { recursive: true, force: true });
  try {
    const file = path.join(dir, "fax.pdf");
    const { bytes, fileName } = await client.downloadFax(messageId, file);
    const filename = safeName(fileName) ?? fallbackName;
    return { path: file, filename, bytes, remove };
  } catch (err) {
    await remove();
    throw err;
  }
}

function safeName(name: string | null): string | null {
  if (!name) return null;
  const base = path
    .basename(name)
    .replace(/[\u0000-\u001f"\\/]/g, "_")
    .trim();
  if (!base) return null;
  return /\.pdf$/i.test(base) ? base : `${base}.pdf`;
}
