// Addressing by file name, the simplest way to fax from a scanner or a script:
// "15551234567.pdf", "15551234567,15557654321 - Invoice 42.pdf" (subject after " - ").

export interface FileNameAddress {
  /** Raw numbers; empty when the name does not start with numbers. */
  numbers: string[];
  subject?: string;
}

const NUMBERS = /^[+\d][\d\s+().,;-]*$/;

export function parseFileName(fileName: string): FileNameAddress {
  const dot = fileName.lastIndexOf(".");
  const stem = dot > 0 ? fileName.slice(0, dot) : fileName;
  const sep = stem.indexOf(" - ");
  const head = (sep >= 0 ? stem.slice(0, sep) : stem).trim();
  const subject = sep >= 0 ? stem.slice(sep + 3).trim() || undefined : undefined;
  if (!NUMBERS.test(head) || !/\d{4}/.test(head.replace(/[\s().-]/g, ""))) return { numbers: [] };
  const numbers = head
    .split(/[,;]/)
    .map((s) => s.trim())
    .filter(Boolean);
  return { numbers, subject };
}
