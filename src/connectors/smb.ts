// A received fax into an SMB share with `smbclient` (Samba's client): the password in a private
// authentication file (-A), never in argv or the environment; folders made one by one; a name
// checked free before the sidecar claims it (smbclient's put overwrites, so "never overwrite" is
// the check, and the lease keeps other gateways off the same fax). Names are cleaned to
// [A-Za-z0-9+._-] (naming.ts), so they need no quoting inside smbclient's command line.
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { SmbDelivery } from "../config/index.js";
import type { Connector, DeliveryInput, DeliveryResult } from "./connector.js";
import { type FolderOps, writeFaxToFolder } from "./folder-writer.js";
import { refused, unavailable } from "./problem.js";
import type { SecretReader } from "./secrets.js";

const PEER = "SMB server";
const NOT_FOUND = /NT_STATUS_(OBJECT_NAME_NOT_FOUND|OBJECT_PATH_NOT_FOUND|NO_SUCH_FILE)/;
const REFUSED = /NT_STATUS_(LOGON_FAILURE|ACCESS_DENIED|BAD_NETWORK_NAME|ACCOUNT_\w+|WRONG_PASSWORD|PASSWORD_\w+)/;
const STATUS = /NT_STATUS_[A-Z_]+/;

interface Run {
  out: string;
  failed: boolean;
}

export class SmbConnector implements Connector {
  constructor(
    private readonly spec: SmbDelivery,
    private readonly secret: SecretReader,
  ) {}

  async deliver(input: DeliveryInput): Promise<DeliveryResult> {
    const dir = await mkdtemp(path.join(os.tmpdir(), "faxgate-smb-"));
    try {
      const auth = path.join(dir, "auth");
      const lines = [`username = ${this.spec.username}`, `password = ${this.secret(this.spec.passwordSecret)}`];
      if (this.spec.domain) lines.push(`domain = ${this.spec.domain}`);
      await writeFile(auth, `${lines.join("\n")}\n`, { mode: 0o600 });
      const run = (cmd: string) => this.smbclient(auth, cmd);
      const exists = async (p: string) => {
        const r = await run(`allinfo ${p}`);
        if (!r.failed) return true;
        if (NOT_FOUND.test(r.out)) return false;
        throw this.problem(r.out);
      };
      const ops: FolderOps = {
        ensureFolders: async (folders) => {
          for (let i = 1; i <= folders.length; i++) {
            const r = await run(`mkdir ${folders.slice(0, i).join("/")}`);
            if (r.failed && !/NT_STATUS_OBJECT_NAME_COLLISION/.test(r.out)) throw this.problem(r.out);
          }
        },
        exists,
        putNew: async (p, data) => {
          if (await exists(p)) return "exists";
          const local = path.join(dir, "upload");
          await writeFile(local, data, { mode: 0o600 });
          const r = await run(`put ${local} ${p}`);
          await rm(local, { force: true });
          if (r.failed) throw this.problem(r.out);
          return "written";
        },
        readText: async (p) => {
          const local = path.join(dir, "read");
          const r = await run(`get ${p} ${local}`);
          if (r.failed) {
            if (NOT_FOUND.test(r.out)) return null;
            throw this.problem(r.out);
          }
          const text = await readFile(local, "utf8");
          await rm(local, { force: true });
          return text;
        },
        describe: (p) => `${this.spec.share}/${p}`,
      };
      return await writeFaxToFolder(ops, this.spec, input);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  private problem(out: string): Error {
    const status = STATUS.exec(out)?.[0] ?? "an error";
    if (REFUSED.test(out)) return refused(`the ${PEER} refused: ${status}`);
    return unavailable(`the ${PEER}: ${status}`);
  }

  private smbclient(authFile: string, command: string): Promise<Run> {
    const args = [this.spec.share, "-A", authFile, "-c", command, "-t", String(Math.ceil(this.spec.timeout / 1000))];
    if (this.spec.port) args.push("-p", String(this.spec.port));
    return new Promise((resolve, reject) => {
      execFile(
        "smbclient",
        args,
        { timeout: this.spec.timeout + 5000, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "C" } },
        (err, stdout, stderr) => {
          const out = `${stdout}\n${stderr}`;
          const e = err as (NodeJS.ErrnoException & { killed?: boolean }) | null;
          if (e?.code === "ENOENT") return reject(refused("smbclient is not installed (apt-get install smbclient)"));
          if (e?.killed) return reject(unavailable(`the ${PEER} did not answer in time`));
          // smbclient may exit 0 with an NT_STATUS error of a -c command: the words decide
          resolve({ out, failed: e !== null || STATUS.test(out) });
        },
      );
    });
  }
}
