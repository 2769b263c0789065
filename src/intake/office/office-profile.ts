// The LibreOffice settings every conversion runs with, written into the converter's own profile
// (-env:UserInstallation) before its first start. A document is untrusted input: it must not run
// macros, update links, or load anything it names outside itself. Gotenberg writes the same
// BlockUntrustedRefererLinks setting; the rest are LibreOffice's own switches for the same class.
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";

/** [path, property, value]: each becomes one <item> of registrymodifications.xcu. */
const SETTINGS: Array<[string, string, string | number | boolean]> = [
  // linked content (pictures, sections, OLE links) from a document outside a trusted location is
  // not loaded; no location is trusted here
  ["/org.openoffice.Office.Common/Security/Scripting", "BlockUntrustedRefererLinks", true],
  // macros: very high security level (only signed macros from trusted locations), and none run
  ["/org.openoffice.Office.Common/Security/Scripting", "MacroSecurityLevel", 3],
  ["/org.openoffice.Office.Common/Security/Scripting", "DisableMacrosExecution", true],
  ["/org.openoffice.Office.Common/Security/Scripting", "CheckDocumentEvents", true],
  // links are never updated on load: Writer's 0 and Calc's 1 both mean "never"
  ["/org.openoffice.Office.Writer/Content/Update", "Link", 0],
  ["/org.openoffice.Office.Writer/Content/Update", "Field", false],
  ["/org.openoffice.Office.Calc/Content/Update", "Link", 1],
  // formulas keep the values the document was saved with (no WEBSERVICE or external reference
  // evaluated on load): 1 is "never recalculate"
  ["/org.openoffice.Office.Calc/Formula/Load", "OOXMLRecalcMode", 1],
  ["/org.openoffice.Office.Calc/Formula/Load", "ODFRecalcMode", 1],
  // no network use of its own: no update checks, no proxy auto-detection, no crash reports
  [
    "/org.openoffice.Office.Jobs/Jobs/org.openoffice.Office.Jobs:Job['UpdateCheck']/Arguments",
    "AutoCheckEnabled",
    false,
  ],
  ["/org.openoffice.Inet/Settings", "ooInetProxyType", 0],
  ["/org.openoffice.Office.Common/Misc", "CrashReport", false],
  ["/org.openoffice.Office.Common/Misc", "FirstRun", false],
  ["/org.openoffice.Office.Common/Misc", "UseOpenCL", false],
  ["/org.openoffice.Office.Common/Misc", "UseLocking", false],
];

function xmlEscape(s: string): string {
  return s
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;");
}

/** The registrymodifications.xcu text of the hardened profile. */
export function hardenedRegistry(): string {
  const items = SETTINGS.map(
    ([p, name, value]) =>
      `  <item oor:path="${xmlEscape(p)}"><prop oor:name="${name}" oor:op="fuse"><value>${typeof value === "string" ? xmlEscape(value) : String(value)}</value></prop></item>`,
  );
  return `<?xml version="1.0" encoding="UTF-8"?>\n<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n${items.join("\n")}\n</oor:items>\n`;
}

/**
 * Writes the hardened settings into a profile folder (LibreOffice keeps them in `user/`). Written
 * before every conversion: LibreOffice rewrites the file when it exits, and a document must not be
 * able to leave a weaker setting behind for the next one.
 */
export async function writeHardenedProfile(profile: string): Promise<void> {
  await mkdir(path.join(profile, "user"), { recursive: true, mode: 0o700 });
  await writeFile(path.join(profile, "user", "registrymodifications.xcu"), hardenedRegistry(), { mode: 0o600 });
}
