// The types of what scripts/apply-patches.mjs exports, for the tests that read patches with it.

/** One file a patch changes: its path in the package's folder and its hunks' lines. */
export interface PatchFile {
  path: string;
  hunks: Array<{ before: string[]; after: string[] }>;
}

/** The patch's files and hunks (a unified diff; text before the first `---` is its description). */
export function parsePatch(text: string): PatchFile[];

/** The installed package's folder: up from its entry point to the package.json naming it. */
export function packageDir(name: string): string;
