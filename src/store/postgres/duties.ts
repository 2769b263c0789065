// One dedicated connection per instance, outside the pool, for what lives as long as a session:
// duties (session advisory locks: when this instance dies or loses PostgreSQL, the server drops
// the lock and another instance takes the duty on its next try) and the LISTEN for the other
// instances' new jobs.
import pg from "pg";
import { JOBS_CHANNEL, lockKey, type PgContext } from "./context.js";

export class DutyConnection {
  private client: pg.Client | null = null;
  private connecting: Promise<pg.Client> | null = null;
  private readonly held = new Set<string>();
  /** The connection that LISTENs for other instances' new jobs, once someone asked. */
  private listeningOn: pg.Client | null = null;

  /** `onJob` hears the id of each job another instance enqueued (or addressed), while `listening()`. */
  constructor(
    private readonly ctx: PgContext,
    private readonly onJob: (id: string) => void,
    private readonly listening: () => boolean,
  ) {}

  async holdsDuty(duty: string): Promise<boolean> {
    if (this.ctx.closed) return false;
    let client: pg.Client;
    try {
      client = await this.connection();
    } catch (err) {
      this.ctx.log.warn(
        { duty, err: this.ctx.error(err, "connection").message },
        "cannot reach PostgreSQL to hold a duty",
      );
      return false;
    }
    try {
      if (this.held.has(duty)) {
        await client.query("SELECT 1"); // still connected, so still held
        return true;
      }
      const r = await client.query<{ ok: boolean }>("SELECT pg_try_advisory_lock(hashtext($1)) AS ok", [
        lockKey(`duty:${duty}`),
      ]);
      if (r.rows[0]?.ok) {
        this.held.add(duty);
        this.ctx.log.info({ duty }, "took the duty");
        return true;
      }
      return false;
    } catch (err) {
      this.drop(client, err);
      return false;
    }
  }

  /**
   * Starts LISTENing (on this connection, from the first listener on; until it is up, or while it
   * is being replaced, new jobs are found by the dispatcher's next pass).
   */
  listen(): void {
    if (this.ctx.closed) return;
    void this.connection().then(
      (client) => this.listenOn(client),
      () => undefined,
    );
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    this.held.clear();
    await client?.end().catch(() => undefined);
  }

  private async listenOn(client: pg.Client): Promise<void> {
    if (this.listeningOn === client || !this.listening()) return;
    this.listeningOn = client;
    client.on("notification", (msg) => {
      if (msg.channel !== JOBS_CHANNEL || !msg.payload) return;
      const [tag, id] = msg.payload.split(" ");
      if (tag === this.ctx.instanceTag || !id) return;
      this.onJob(id);
    });
    try {
      await client.query(`LISTEN ${JOBS_CHANNEL}`);
    } catch {
      // the connection is going; the next one listens again (connection())
      if (this.listeningOn === client) this.listeningOn = null;
    }
  }

  private drop(client: pg.Client, err?: unknown): void {
    if (this.client !== client) return;
    this.client = null;
    if (this.held.size > 0)
      this.ctx.log.warn(
        { duties: [...this.held], err: err ? this.ctx.error(err, "connection").message : undefined },
        "lost the connection that held duties",
      );
    this.held.clear();
    void client.end().catch(() => undefined);
  }

  private async connection(): Promise<pg.Client> {
    if (this.client) return this.client;
    if (!this.connecting) {
      this.connecting = (async () => {
        const client = new pg.Client({
          connectionString: this.ctx.url,
          connectionTimeoutMillis: 5000,
          keepAlive: true,
        });
        client.on("error", (err) => this.drop(client, err));
        client.on("end", () => this.drop(client));
        try {
          await client.connect();
          // A host that vanishes (power, network) sends no goodbye: the server's keepalive probes
          // end this session, and so free its duties, within about a minute instead of the OS's
          // two hours (these settings are per session; a server that refuses them keeps its own).
          await client
            .query("SET tcp_keepalives_idle = 30; SET tcp_keepalives_interval = 10; SET tcp_keepalives_count = 3")
            .catch(() => undefined);
        } catch (err) {
          void client.end().catch(() => undefined);
          throw err;
        }
        this.client = client;
        if (this.listening()) await this.listenOn(client);
        return client;
      })().finally(() => {
        this.connecting = null;
      });
    }
    return this.connecting;
  }
}
