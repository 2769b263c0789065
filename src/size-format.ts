// Sizes as people read them in refusals: "25 MB", "1.5 MB", "300 KB", never a count of bytes.

export function formatSize(bytes: number): string {
  const mb = bytes / 1_048_576;
  if (mb >= 10) return `${Math.round(mb)} MB`;
  if (mb >= 1) return `${Number(mb.toFixed(1))} MB`;
  return `${Math.max(1, Math.round(bytes / 1024))} KB`;
}
