// A received fax into OneDrive or a SharePoint library through Microsoft Graph with an app
// registration: a client-credentials token from the tenant's token endpoint, then the folder
// writer's steps as Graph calls. A PUT of the content with @microsoft.graph.conflictBehavior=fail
// (never over a file; 409 when the name is taken), an upload session over 4 MB (Graph's limit of
// a simple upload). Only Graph, the token host and, for the pre-authenticated upload and download
// URLs Graph hands out, the configured fileHosts are reached; no redirect is followed elsewhere.
import type { GraphDelivery } from "../config/index.js";
import type { Connector, DeliveryInput, DeliveryResult } from "./connector.js";
import { type FolderOps, writeFaxToFolder } from "./folder-writer.js";
import { HttpsPeer } from "./https-call.js";
import { refused, unavailable } from "./problem.js";
import { caOf, type SecretReader } from "./secrets.js";

const PEER = "Microsoft Graph";
/** Graph's bound of a simple upload; larger files go through an upload session. */
export const SIMPLE_UPLOAD_MAX = 4 * 1024 * 1024;
/** Upload session fragments must be multiples of 320 KiB (Graph's rule); 10 x 320 KiB. */
const FRAGMENT = 10 * 320 * 1024;

export const tokenUrlOf = (g: GraphDelivery): string =>
  g.tokenUrl ?? `https://login.microsoftonline.com/${encodeURIComponent(g.tenant)}/oauth2/v2.0/token`;

/** "a/b c.pdf" as Graph's path segment ("a/b%20c.pdf"), each segment encoded. */
const encodePath = (p: string): string => p.split("/").map(encodeURIComponent).join("/");

export class GraphConnector implements Connector {
  constructor(
    private readonly spec: GraphDelivery,
    private readonly secret: SecretReader,
  ) {}

  private get root(): string {
    const base = this.spec.graphUrl.replace(/\/+$/, "");
    return this.spec.drive
      ? `${base}/drives/${encodeURIComponent(this.spec.drive)}/root`
      : `${base}/sites/${encodeURIComponent(this.spec.site!)}/drive/root`;
  }

  /** A pre-authenticated URL Graph handed out, reached only when its host is Graph's or a fileHost. */
  private fileUrlPeer(url: string, ca: string | undefined): HttpsPeer {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw refused(`${PEER} handed out a URL that is not one`);
    }
    const host = u.hostname.toLowerCase();
    const ok =
      u.protocol === "https:" &&
      (u.origin === new URL(this.spec.graphUrl).origin ||
        this.spec.fileHosts.some((h) => host === h.toLowerCase() || host.endsWith(`.${h.toLowerCase()}`)));
    if (!ok) throw refused(`${PEER} handed out a URL on another host (${host}): refused; add it to fileHosts`);
    return new HttpsPeer([url], ca, this.spec.timeout, PEER);
  }

  private async token(peer: HttpsPeer): Promise<string> {
    const res = await peer.call(tokenUrlOf(this.spec), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        client_id: this.spec.clientId,
        client_secret: this.secret(this.spec.clientSecret),
        scope: `${new URL(this.spec.graphUrl).origin}/.default`,
        grant_type: "client_credentials",
      }).toString(),
    });
    const t = JSON.parse(res.body || "{}") as { access_token?: unknown };
    if (typeof t.access_token !== "string") throw unavailable(`the token endpoint answered without a token`);
    return t.access_token;
  }

  async deliver(input: DeliveryInput): Promise<DeliveryResult> {
    const ca = caOf(this.spec.caFile);
    const login = new HttpsPeer([tokenUrlOf(this.spec)], ca, this.spec.timeout, `${PEER} token endpoint`);
    const peer = new HttpsPeer([this.spec.graphUrl], ca, this.spec.timeout, PEER);
    const opened: HttpsPeer[] = [login, peer];
    try {
      const auth = { authorization: `Bearer ${await this.token(login)}` };
      const item = (p: string) => `${this.root}:/${encodePath(p)}`;
      const ops: FolderOps = {
        // a PUT by path makes the folders it names
        ensureFolders: async () => {},
        exists: async (p) => (await peer.call(item(p), { method: "GET", headers: auth }, ok404)).status !== 404,
        putNew: async (p, data) => {
          if (data.length <= SIMPLE_UPLOAD_MAX) {
            const r = await peer.call(
              `${item(p)}:/content?@microsoft.graph.conflictBehavior=fail`,
              {
                method: "PUT",
                headers: { ...auth, "content-type": "application/octet-stream" },
                body: Buffer.from(data),
              },
              ok409,
            );
            return r.status === 409 ? "exists" : "written";
          }
          return this.session(peer, item(p), auth, data, ca, opened);
        },
        readText: async (p) => {
          const r = await peer.call(
            `${item(p)}:/content`,
            { method: "GET", headers: auth },
            (s) => s === 404 || s === 302 || (s >= 200 && s < 300),
          );
          if (r.status === 404) return null;
          if (r.status !== 302) return r.body;
          // the content is at a pre-authenticated download URL: no token goes there
          const where = String(r.headers.location ?? "");
          const file = this.fileUrlPeer(where, ca);
          opened.push(file);
          return (await file.call(where, { method: "GET" })).body;
        },
        describe: (p) => `${this.spec.drive ? `drive ${this.spec.drive}` : `site ${this.spec.site}`}:/${p}`,
      };
      return await writeFaxToFolder(ops, this.spec, input);
    } finally {
      await Promise.all(opened.map((p) => p.close()));
    }
  }

  /** Over 4 MB: an upload session that fails on a name in use, then the fragments in order. */
  private async session(
    peer: HttpsPeer,
    item: string,
    auth: Record<string, string>,
    data: Uint8Array,
    ca: string | undefined,
    opened: HttpsPeer[],
  ): Promise<"written" | "exists"> {
    const made = await peer.call(
      `${item}:/createUploadSession`,
      {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ item: { "@microsoft.graph.conflictBehavior": "fail" } }),
      },
      ok409,
    );
    if (made.status === 409) return "exists";
    const url = (JSON.parse(made.body || "{}") as { uploadUrl?: unknown }).uploadUrl;
    if (typeof url !== "string") throw unavailable(`${PEER} opened an upload session without its URL`);
    const up = this.fileUrlPeer(url, ca);
    opened.push(up);
    for (let from = 0; from < data.length; from += FRAGMENT) {
      const part = data.subarray(from, Math.min(from + FRAGMENT, data.length));
      // the upload URL is pre-authenticated: Graph asks that no token is sent there
      const r = await up.call(
        url,
        {
          method: "PUT",
          headers: { "content-range": `bytes ${from}-${from + part.length - 1}/${data.length}` },
          body: Buffer.from(part),
        },
        ok409,
      );
      if (r.status === 409) return "exists";
    }
    return "written";
  }
}

const ok404 = (s: number): boolean => s === 404 || (s >= 200 && s < 300);
const ok409 = (s: number): boolean => s === 409 || (s >= 200 && s < 300);
