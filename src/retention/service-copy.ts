// One service copy deleted and checked gone: DELETE /v1/fax/{messageId}, then the record read back
// (deletedAt or isFilePurged), since a 200 alone does not prove the service let go of the file. A
// delete answered 404 is read back too: an earlier delete may have taken before a crash.
import { describeError } from "../errors.js";
import { isFaxApiError, type FaxApi } from "../fax/index.js";

export type CopyOutcome = { gone: true; deletedAt: string | null } | { gone: false; problem: string };

const notFound = (err: unknown): boolean => isFaxApiError(err) && err.status === 404;

export async function deleteServiceCopy(client: FaxApi, messageId: string): Promise<CopyOutcome> {
  try {
    await client.deleteFax(messageId);
  } catch (err) {
    if (!notFound(err)) return { gone: false, problem: `the delete failed: ${describeError(err)}` };
  }
  try {
    const rec = await client.faxInfo(messageId);
    if (rec.deletedAt || rec.isFilePurged) return { gone: true, deletedAt: rec.deletedAt ?? null };
    return {
      gone: false,
      problem: "the service answered the delete but still keeps the fax (no deletedAt, isFilePurged false)",
    };
  } catch (err) {
    // the service no longer knows the fax at all: gone
    if (notFound(err)) return { gone: true, deletedAt: null };
    return { gone: false, problem: `the check after the delete failed: ${describeError(err)}` };
  }
}
