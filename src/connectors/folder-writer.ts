// A fax written into a document folder (WebDAV, SMB), the same rules for both: a name whose PDF or
// sidecar is taken is passed over for the next ("-2", "-3"...), never overwritten; the sidecar JSON
// is written first, as the claim of the name, then the PDF beside it. A try after a crash finds
// its own sidecar (same messageId) and finishes there instead of writing the fax a second time.
import type { DeliveryInput, DeliveryResult } from "./connector.js";
import { candidate, type FolderPath, folderPath, isOwnSidecar, type MatterRule, sidecarJson } from "./naming.js";
import { refused } from "./problem.js";

/** What a folder protocol offers the writer; paths are "/"-joined under the connector's root. */
export interface FolderOps {
  /** Makes each folder of `folders` (parents first) that is missing. */
  ensureFolders(folders: readonly string[]): Promise<void>;
  exists(path: string): Promise<boolean>;
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
    const found = await ops.readText(side);
    if (found !== null) {
      if (!isOwnSidecar(found, input.fax)) continue;
      // an earlier try of this fax claimed the name: its PDF is there or still to write
      await ops.putNew(pdf, input.document);
      return { where: ops.describe(pdf), placed: p };
    }
    if (await ops.exists(pdf)) continue;
    if ((await ops.putNew(side, sidecar)) === "exists") continue;
    if ((await ops.putNew(pdf, input.document)) === "exists") continue;
    return { where: ops.describe(pdf), placed: p };
  }
  throw refused(`no free name for the fax after ${MAX_CANDIDATES} tries in ${ops.describe(dir || "/")}`);
}
