// `faxgate webhooks register|list|remove`: point the service's fax events at our receiver
// (config key `webhooks`), see what is registered, take a registration away. Needs api.adminKey.
import { FaxgateError } from "../errors.js";
import { createFaxAgent } from "../fax/client.js";
import { FAX_EVENTS, WebhookApi, type ServiceWebhook } from "../webhooks/service-api.js";
import { loadContext, printJson, printTable, serviceOf, type CliContext, type GlobalOptions } from "./context.js";

/** What list prints of a registration: never the password of its credentials. */
function shown(w: ServiceWebhook): ServiceWebhook {
  const user = typeof w.auth === "string" ? w.auth.split(":")[0] : null;
  return { ...w, auth: user === null ? null : `${user}:****` };
}

async function withWebhookApi<T>(ctx: CliContext, fn: (api: WebhookApi) => Promise<T>): Promise<T> {
  const service = serviceOf(ctx);
  if (!service.adminKey)
    throw new FaxgateError("USAGE", "this needs an admin key: set api.adminKey in the config", {
      field: "api.adminKey",
    });
  const dispatcher = createFaxAgent({ caFile: service.caFile, timeoutMs: ctx.config.api.timeoutMs });
  try {
    return await fn(
      new WebhookApi({
        baseUrl: service.baseUrl,
        adminKey: service.adminKey,
        dispatcher,
        timeoutMs: ctx.config.api.timeoutMs,
      }),
    );
  } finally {
    await dispatcher.close();
  }
}

function webhooksConfig(ctx: CliContext) {
  const w = ctx.config.webhooks;
  if (!w)
    throw new FaxgateError("USAGE", "no webhook receiver is configured (config key: webhooks)", { field: "webhooks" });
  return w;
}

/** Registers (or updates, when one with the same URL exists) the receiver for all six fax events. */
export async function webhooksRegister(opts: GlobalOptions & { name?: string }): Promise<void> {
  const ctx = loadContext(opts);
  const w = webhooksConfig(ctx);
  const events = Object.fromEntries(FAX_EVENTS.map((e) => [e, true]));
  const body = {
    name: opts.name ?? "faxgate",
    url: w.url,
    events,
    auth: `${w.username}:${w.password}`,
    attachmentEnabled: false,
  };
  await withWebhookApi(ctx, async (api) => {
    const existing = (await api.list()).find((x) => x.url === w.url);
    const saved = existing ? await api.update(existing.uuid, body) : await api.create(body);
    if (opts.json) return printJson(shown(saved));
    process.stdout.write(
      `${existing ? "updated" : "registered"} webhook ${saved.uuid}: ${saved.url} for ${FAX_EVENTS.length} events\n`,
    );
  });
}

export async function webhooksList(opts: GlobalOptions): Promise<void> {
  const ctx = loadContext(opts);
  await withWebhookApi(ctx, async (api) => {
    const all = (await api.list()).map(shown);
    if (opts.json) return printJson(all);
    printTable(
      ["WEBHOOK ID", "NAME", "URL", "EVENTS", "AUTH"],
      all.map((w) => [
        w.uuid,
        w.name,
        w.url,
        Object.keys(w.events ?? {})
          .filter((k) => w.events[k])
          .join(","),
        w.auth ?? "",
      ]),
    );
  });
}

/** Removes the given registrations, or with no ids the one pointing at webhooks.url. */
export async function webhooksRemove(ids: string[], opts: GlobalOptions): Promise<void> {
  const ctx = loadContext(opts);
  await withWebhookApi(ctx, async (api) => {
    let targets = ids;
    if (targets.length === 0) {
      const url = webhooksConfig(ctx).url;
      targets = (await api.list()).filter((x) => x.url === url).map((x) => x.uuid);
      if (targets.length === 0) throw new FaxgateError("API_NOT_FOUND", `no webhook is registered for ${url}`);
    }
    for (const id of targets) {
      await api.remove(id);
      process.stdout.write(`removed webhook ${id}\n`);
    }
  });
}
