// A received fax into a WebDAV folder (Nextcloud, SharePoint's WebDAV, Apache mod_dav) with the
// `webdav` client: MKCOL of the folders, PUT with If-None-Match: * (never over a file), the
// sidecar first. Basic/Digest credentials from the secrets file; TLS verified against caFile;
// connections only to the URL's host (a redirect elsewhere fails before it is followed).
import { createClient, type WebDAVClient } from "webdav";
import type { WebdavDelivery } from "../config/index.js";
import type { Connector, DeliveryInput, DeliveryResult } from "./connector.js";
import { type FolderOps, writeFaxToFolder } from "./folder-writer.js";
import { OTHER_HOST, pinnedAgents } from "./pinned-agent.js";
import { networkProblem, refused, statusProblem } from "./problem.js";
import { caOf, type SecretReader } from "./secrets.js";

const PEER = "WebDAV server";

function problem(err: unknown): Error {
  const e = err as { status?: number; code?: string; cause?: { code?: string } };
  if (typeof e.status === "number") return statusProblem(e.status, PEER);
  const code = e.code ?? e.cause?.code ?? "";
  if (code === OTHER_HOST || String((err as Error).message).includes(OTHER_HOST))
    return refused(`the ${PEER} redirected to another host: refused (the connector goes only to the host it names)`);
  return networkProblem(err, PEER);
}

async function attempt<T>(timeoutMs: number, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  try {
    return await fn(AbortSignal.timeout(timeoutMs));
  } catch (err) {
    throw problem(err);
  }
}

export class WebdavConnector implements Connector {
  constructor(
    private readonly spec: WebdavDelivery,
    private readonly secret: SecretReader,
  ) {}

  private client(): WebDAVClient {
    return createClient(this.spec.url, {
      username: this.spec.username,
      password: this.secret(this.spec.passwordSecret),
      ...pinnedAgents(this.spec.url, caOf(this.spec.caFile)),
    });
  }

  async deliver(input: DeliveryInput): Promise<DeliveryResult> {
    const c = this.client();
    const ms = this.spec.timeout;
    const root = this.spec.url.replace(/\/+$/, "");
    const ops: FolderOps = {
      ensureFolders: async (folders) => {
        for (let i = 1; i <= folders.length; i++) {
          const dir = `/${folders.slice(0, i).join("/")}`;
          try {
            await c.createDirectory(dir, { signal: AbortSignal.timeout(ms) });
          } catch (err) {
            // 405: the collection is there already (RFC 4918 9.3.1)
            if ((err as { status?: number }).status !== 405) throw problem(err);
          }
        }
      },
      exists: (path) => attempt(ms, (signal) => c.exists(`/${path}`, { signal })),
      putNew: (path, data) =>
        attempt(ms, async (signal) => {
          // asked first as well: not every server honours If-None-Match: * on a PUT
          if (await c.exists(`/${path}`, { signal })) return "exists";
          return (await c.putFileContents(`/${path}`, Buffer.from(data), { overwrite: false, signal }))
            ? "written"
            : "exists";
        }),
      readText: async (path) => {
        try {
          return (await c.getFileContents(`/${path}`, { format: "text", signal: AbortSignal.timeout(ms) })) as string;
        } catch (err) {
          if ((err as { status?: number }).status === 404) return null;
          throw problem(err);
        }
      },
      describe: (path) => `${root}/${path}`,
    };
    return writeFaxToFolder(ops, this.spec, input);
  }
}
