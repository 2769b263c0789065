// What runs on the reader threads (reader-pool.ts): the CPU-heavy reading of hostile input (MIME
// parsing of a stored mail, a mail's HTML body turned into text; PDF text is read in child
// processes, pdf/pdf-text-child.ts). Errors come back as plain data so that their errno code
// (ENOSPC, EACCES...) survives the thread boundary; reader-pool.ts turns them back into errors.
import { bodyText } from "./mail/body-text.js";
import { parseMail, type ParsedMail } from "./mail/mail-parse.js";

export type Task = { kind: "parseMail"; messageFile: string; partsDir: string } | { kind: "htmlText"; html: string };

export type TaskOutcome<T> =
  | { ok: true; value: T }
  | { ok: false; error: { name: string; message: string; code?: string } };

export interface TaskValues {
  parseMail: ParsedMail;
  htmlText: string;
}

async function outcome<T>(fn: () => Promise<T>): Promise<TaskOutcome<T>> {
  try {
    return { ok: true, value: await fn() };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const code = typeof e?.code === "string" ? e.code : undefined;
    return {
      ok: false,
      error: { name: e?.name ?? "Error", message: e?.message ?? String(err), ...(code ? { code } : {}) },
    };
  }
}

export default async function runTask(task: Task): Promise<TaskOutcome<unknown>> {
  switch (task.kind) {
    case "parseMail":
      return outcome(() => parseMail(task.messageFile, task.partsDir));
    case "htmlText":
      return outcome(async () => bodyText({ text: "", html: task.html }));
    default:
      return {
        ok: false,
        error: { name: "Error", message: `unknown task ${JSON.stringify((task as { kind?: unknown }).kind)}` },
      };
  }
}
