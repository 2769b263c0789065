// A private PostgreSQL cluster for one test file: initdb + pg_ctl in a temp folder, on a free
// loopback port, its unix socket in the same folder. PostgreSQL refuses to run as root, so as root
// the cluster runs as the `postgres` system user (the folder is chowned to it). A new database per
// test is cheap (`createDatabase`). Where the binaries are absent, `pgAvailable()` says why and the
// tests skip with that message.
import { execFileSync, spawnSync } from "node:child_process";
import { chownSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { freePort } from "./net.js";
import { waitUntil } from "./wait.js";
import { tempFolder } from "../tmp-dir.js";

const BIN_DIRS = [
  "/usr/lib/postgresql/17/bin",
  "/usr/lib/postgresql/16/bin",
  "/usr/lib/postgresql/15/bin",
  "/usr/local/bin",
  "/usr/bin",
];

function findBin(name: string): string | null {
  for (const d of BIN_DIRS) if (existsSync(path.join(d, name))) return path.join(d, name);
  return null;
}

/** Null when a cluster can be started here, otherwise why not (for the skip message). */
export function pgAvailable(): string | null {
  if (!findBin("initdb") || !findBin("pg_ctl"))
    return "PostgreSQL binaries (initdb, pg_ctl) are not installed: apt-get install postgresql";
  if (process.getuid?.() === 0 && spawnSync("id", ["-u", "postgres"]).status !== 0)
    return "running as root and there is no `postgres` system user to run the cluster as";
  return null;
}

export interface PgCluster {
  port: number;
  dir: string;
  /** postgres://postgres@127.0.0.1:PORT/<db> */
  url(db: string): string;
  /** A fresh, empty database; returns its URL. */
  createDatabase(name?: string): Promise<string>;
  /**
   * A login role that must give its password over TCP (scram-sha-256; everyone else is trusted),
   * owning a fresh database; returns the database's name.
   */
  createPasswordRole(role: string, password: string): Promise<string>;
  /** Stops the server (fast: open connections are cut), keeping its files. */
  stop(): void;
  /** Starts it again on the same port. */
  start(): void;
  /** Stops it and removes its folder. */
  destroy(): void;
}

let dbSeq = 0;

export async function startPgCluster(opts: { durable?: boolean } = {}): Promise<PgCluster> {
  const why = pgAvailable();
  if (why) throw new Error(why);
  const initdb = findBin("initdb")!;
  const pgCtl = findBin("pg_ctl")!;
  const root = process.getuid?.() === 0;
  const dir = tempFolder("pg");
  if (root)
    chownSync(
      dir,
      Number(execFileSync("id", ["-u", "postgres"]).toString()),
      Number(execFileSync("id", ["-g", "postgres"]).toString()),
    );
  const asPg = (bin: string, args: string[]): void => {
    const [cmd, argv] = root ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, args];
    const r = spawnSync(cmd, argv, { encoding: "utf8", timeout: 60_000 });
    if (r.status !== 0)
      throw new Error(`${path.basename(bin)} ${args.join(" ")} failed: ${r.stderr || r.stdout || r.error?.message}`);
  };
  const data = path.join(dir, "data");
  asPg(initdb, ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"]);
  const port = await freePort();
  // fsync off: the tests kill gateways, not the database host; it keeps the shared machine fast.
  // `durable` (the bench): PostgreSQL's defaults, so a commit is on disk as SQLite's FULL is
  const speed = opts.durable ? "" : " -c fsync=off -c synchronous_commit=off -c full_page_writes=off";
  const serverOpts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200${speed}`;
  const start = (): void =>
    asPg(pgCtl, ["-D", data, "-l", path.join(dir, "log"), "-w", "-t", "60", "-o", serverOpts, "start"]);
  const stop = (): void => asPg(pgCtl, ["-D", data, "-m", "fast", "-w", "stop"]);
  start();
  const url = (db: string): string => `postgres://postgres@127.0.0.1:${port}/${db}`;
  let running = true;
  return {
    port,
    dir,
    url,
    async createDatabase(name?: string) {
      const db = name ?? `t${process.pid}_${++dbSeq}`;
      const c = new pg.Client({ connectionString: url("postgres") });
      await c.connect();
      try {
        await c.query(`CREATE DATABASE ${db}`);
      } finally {
        await c.end();
      }
      return url(db);
    },
    async createPasswordRole(role, password) {
      const db = `t${process.pid}_${++dbSeq}`;
      const c = new pg.Client({ connectionString: url("postgres") });
      await c.connect();
      try {
        // the password as a literal: format() quotes it whatever it holds
        const { rows } = await c.query("SELECT format('CREATE ROLE %I LOGIN PASSWORD %L', $1::text, $2::text) AS sql", [
          role,
          password,
        ]);
        await c.query(rows[0].sql);
        await c.query(`CREATE DATABASE ${db} OWNER "${role}"`);
        const hba = path.join(data, "pg_hba.conf");
        writeFileSync(hba, `host all "${role}" 127.0.0.1/32 scram-sha-256\n${readFileSync(hba, "utf8")}`);
        await c.query("SELECT pg_reload_conf()");
      } finally {
        await c.end();
      }
      // the reload is signalled, not waited for: wait until a wrong password is refused
      await waitUntil(
        async () => {
          const probe = new pg.Client({
            host: "127.0.0.1",
            port,
            user: role,
            password: `not-${password}`,
            database: db,
          });
          try {
            await probe.connect();
            await probe.end();
            return false;
          } catch (err) {
            return (err as { code?: string }).code === "28P01";
          }
        },
        "pg_hba.conf reloaded",
        10_000,
      );
      return db;
    },
    stop() {
      if (running) stop();
      running = false;
    },
    start() {
      if (!running) start();
      running = true;
    },
    destroy() {
      try {
        if (running) stop();
      } catch {
        // already gone
      }
      running = false;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
