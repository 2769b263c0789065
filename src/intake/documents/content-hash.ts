// The content hash that ties a print file to its job (dedupe, the repeat window, finding a failed
// job's original), for the print door and the spool alike.
import { createHash } from "node:crypto";

export function sha256(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}
