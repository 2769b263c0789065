// A fax written into a document folder (WebDAV, SMB), the same rules for both: the sidecar JSON is
// written first, as the claim of its name (never over an existing file: the next free name "-2",
// "-3"... is taken instead), then the PDF beside it. A try after a crash finds its own sidecar
// (same messageId) and finishes there instead of writing the fax a second time.
import type { DeliveryInput, DeliveryResult } from "./connector.js";
import { candidate, type FolderPath, folderPath, isOwnSidecar, type MatterRule, sidecarJson } from "./naming.js";
import { refused } from "./problem.js";

/** What a folder protocol offers the writer; paths are "/"-joined under the connector's root. */
export interface FolderOps {
  /** Makes each folder of `folders` (parents first) that is missing. */
  ensureFolders(folders: readonly string[]): Promise<void>;
  /** Writes a new file; "exists" (nothing written) when the name is taken. */
  putNew(path: string, data: Uint8Array): Promise<"written" | "exists">;
  /** A file's text, or null when there is none. */
  readText(path: string): Promise<string | null>;
  /** Where the file is, for the timeline (the URL, the share path). */
  describe(path: string): string;
}

const MAX_CANDIDATES = 100;

export async function writeFaxToFolder(
  ops: FolderOps,
  spec: { path: string; unsorted: string; matter?: MatterRule | undefined },
  input: DeliveryInput,
): Promise<DeliveryResult & { placed: FolderPath }> {
  if (!input.document) throw refused(`no document to write (the reception ${input.fax.status})`);
  const p = folderPath(spec, input.fax);
  await ops.ensureFolders(p.folders);
  const dir = p.folders.length ? `${p.folders.join("/")}/` : "";
  for (let n = 1; n <= MAX_CANDIDATES; n++) {
    const pdf = `${dir}${candidate(p.name, n)}`;
    const side = `${dir}${candidate(p.sidecar, n)}`;
    const sidecar = Buffer.from(
      sidecarJson(input.fax, { ...p, name: candidate(p.name, n) }, input.rule, input.deliveryId),
    );
    if ((await ops.putNew(side, sidecar)) === "exists" && !isOwnSidecar(await ops.readText(side), input.fax)) continue;
    // the name is ours (just claimed, or claimed by an earlier try of this fax)
    await ops.putNew(pdf, input.document);
    return { where: ops.describe(pdf), placed: p };
  }
  throw refused(`no free name for the fax after ${MAX_CANDIDATES} tries in ${ops.describe(dir || "/")}`);
}
