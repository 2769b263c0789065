// A writer that keeps a file growing: for the spool's rules on files that are still being written.
import { lstat, open } from "node:fs/promises";

/**
 * Creates `file` and appends `chunk(i)` every `everyMs`, `times` times, through one descriptor;
 * says whether the name stopped holding that file meanwhile (it was taken). With `untilTaken` it
 * stops writing once it was.
 */
export async function grow(
  file: string,
  chunk: (i: number) => string | Buffer,
  everyMs: number,
  times: number,
  untilTaken = false,
): Promise<{ takenWhileGrowing: boolean; bytes: number }> {
  const fh = await open(file, "wx");
  const ino = (await fh.stat()).ino;
  let takenWhileGrowing = false;
  let bytes = 0;
  try {
    for (let i = 0; i < times; i++) {
      bytes += (await fh.write(Buffer.from(chunk(i)))).bytesWritten;
      // fixed wait on purpose: the writer's pace is what is under test
      await new Promise((r) => setTimeout(r, everyMs));
      const st = await lstat(file).catch(() => null);
      if (!st || st.ino !== ino) takenWhileGrowing = true;
      if (takenWhileGrowing && untilTaken) break;
    }
  } finally {
    await fh.close();
  }
  return { takenWhileGrowing, bytes };
}
