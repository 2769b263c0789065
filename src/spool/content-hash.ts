// The content hash that ties a spool file to its job (dedupe, finding a failed job's original).
import { createHash } from "node:crypto";

export function sha256(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}
