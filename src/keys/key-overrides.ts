// A key rotated by the daemon itself cannot be written back into a config file that reads it from
// ${ENV}; it is kept in <data>/keys.json (0600) instead and wins over the config's key only while
// the config still holds the key it replaced. Once the admin puts a new key in the config, the
// config wins again.
import { readFileSync } from "node:fs";
import path from "node:path";
import type { UserConfig } from "../config/index.js";
import { writeFileAtomic } from "../fs/index.js";
import { sha256Hex } from "../sha256.js";

interface Override {
  apiKey: string;
  /** sha256 of the config key this one replaced */
  replaces: string;
  keyId: string;
  rotatedAt: string;
}

type OverrideFile = Record<string, Override>;

export function keyFingerprint(key: string): string {
  return sha256Hex(key);
}

function filePath(dataDir: string): string {
  return path.join(dataDir, "keys.json");
}

function read(dataDir: string): OverrideFile {
  try {
    return JSON.parse(readFileSync(filePath(dataDir), "utf8")) as OverrideFile;
  } catch {
    return {};
  }
}

/** The users with any daemon-rotated keys applied. */
export function effectiveUsers(users: UserConfig[], dataDir: string): UserConfig[] {
  const overrides = read(dataDir);
  return users.map((u) => {
    const o = overrides[u.name];
    return o && o.replaces === keyFingerprint(u.apiKey) ? { ...u, apiKey: o.apiKey } : u;
  });
}

export async function saveOverride(
  dataDir: string,
  user: string,
  configKey: string,
  newKey: string,
  keyId: string,
  at: Date,
): Promise<void> {
  const all = read(dataDir);
  all[user] = { apiKey: newKey, replaces: keyFingerprint(configKey), keyId, rotatedAt: at.toISOString() };
  await writeFileAtomic(filePath(dataDir), `${JSON.stringify(all, null, 2)}\n`, 0o600);
}
