// Live updates for the console (server-sent events on /api/events). One loop looks at the queue
// every web.livePoll for jobs changed since its last look (`updatedSince`), so changes made by
// another gateway sharing a PostgreSQL queue arrive as well as this process's own; each change
// goes to the streams of the job's user (and of operators watching everything). The loop runs
// only while a page is open.
// A stream is only as good as its session: the session (and, for an operator's everything-stream,
// the admin role) is looked up again before every event and heartbeat, and sign-out, expiry and a
// reload that ends the session close its streams at once, not at the next change.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { Clock } from "../clock.js";
import { describeError } from "../errors.js";
import { jobJson } from "../job-json.js";
import type { Logger } from "../log/index.js";
import { Periodic } from "../periodic.js";
import type { QueueView } from "./queue-view.js";
import { sessionOf, type Session } from "./sessions.js";

interface Stream {
  sessionId: string;
  user: string;
  everyone: boolean;
  write(chunk: string): void;
  close(): void;
}

const HEARTBEAT_MS = 15_000;

export class LiveUpdates {
  private readonly streams = new Set<Stream>();
  private loop: Periodic<void> | null = null;
  /** high-water mark: jobs updated at or after it are looked at next time */
  private since: string;
  /** what each recent job looked like when last sent (its updatedAt), to skip repeats */
  private readonly seen = new Map<string, string>();
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(
    private readonly opts: {
      view: QueueView;
      intervalMs: number;
      clock: Clock;
      logger: Logger;
      /** the session as it stands now (null once ended or expired) */
      session: (id: string) => Promise<{ user: string; admin: boolean } | null>;
    },
  ) {
    this.since = new Date(opts.clock.now()).toISOString();
  }

  /** A change made here: look now instead of at the next tick. */
  poke(): void {
    this.loop?.wake();
  }

  serve(req: FastifyRequest, reply: FastifyReply, s: Session): void {
    const everyone = s.admin && (req.query as Record<string, string | undefined>).all === "1";
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      connection: "keep-alive",
    });
    const stream: Stream = {
      sessionId: s.id,
      user: s.user,
      everyone,
      write: (c) => void res.write(c),
      close: () => res.end(),
    };
    res.write(": live\n\n");
    this.streams.add(stream);
    this.ensureRunning();
    req.raw.on("close", () => this.drop(stream));
  }

  /** Closes the streams of sessions that ended (sign-out, expiry, a reload that removed them). */
  async recheck(): Promise<void> {
    await Promise.all([...this.streams].map((st) => this.allowed(st)));
  }

  stop(): void {
    this.halt();
    for (const st of this.streams) st.close();
    this.streams.clear();
  }

  /** Whether the stream's session still may see what it streams; closes it when not. */
  private async allowed(st: Stream): Promise<boolean> {
    const s = await this.opts.session(st.sessionId).catch(() => null);
    if (!this.streams.has(st)) return false; // closed meanwhile, by its client or another check
    if (s && s.user === st.user && (!st.everyone || s.admin)) return true;
    this.drop(st);
    // `event: end` tells the page not to reconnect with a session that is gone
    st.write('event: end\ndata: {"reason":"session ended"}\n\n');
    st.close();
    return false;
  }

  private drop(st: Stream): void {
    if (!this.streams.delete(st)) return;
    if (this.streams.size === 0) this.halt();
  }

  private ensureRunning(): void {
    if (this.loop) return;
    // changes made while nobody watched are not news: start from now
    this.since = new Date(this.opts.clock.now()).toISOString();
    this.seen.clear();
    this.loop = new Periodic(() => this.look(), {
      intervalMs: this.opts.intervalMs,
      onError: (err) =>
        this.opts.logger.warn({ err: describeError(err) }, "web live updates: reading the queue failed"),
      unref: true,
    });
    this.loop.start();
    this.heartbeat = setInterval(() => {
      for (const s of this.streams) void this.allowed(s).then((ok) => ok && s.write(": keep-alive\n\n"));
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  private halt(): void {
    void this.loop?.stop();
    this.loop = null;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  private async look(): Promise<void> {
    await this.recheck();
    if (this.streams.size === 0) return;
    const started = new Date(this.opts.clock.now()).toISOString();
    const changed = await this.opts.view.changedSince({}, this.since);
    const now = this.opts.clock.now();
    let newest = this.since;
    for (const job of changed.sort((a, b) => a.updatedAt.localeCompare(b.updatedAt))) {
      if (this.seen.get(job.id) === job.updatedAt) continue;
      this.seen.set(job.id, job.updatedAt);
      if (job.updatedAt > newest) newest = job.updatedAt;
      const data = `event: job\ndata: ${JSON.stringify(jobJson(job, new Map(), now))}\n\n`;
      for (const s of this.streams) if ((s.everyone || s.user === job.user) && (await this.allowed(s))) s.write(data);
    }
    // never past the time this look began: a commit racing it is seen next time
    // biome-ignore lint/complexity/useMathMinMax: these are ISO timestamps, compared as strings
    this.since = newest < started ? newest : started;
    if (this.seen.size > 5000) for (const k of [...this.seen.keys()].slice(0, 2500)) this.seen.delete(k);
  }
}

/** GET /api/events (in the signed-in scope): the user's stream (an operator's `?all=1`: everyone's). */
export const liveRoutes: FastifyPluginAsync<{ live: LiveUpdates }> = async (api, { live }) => {
  api.get("/api/events", async (req, reply) => live.serve(req, reply, sessionOf(req)));
};
