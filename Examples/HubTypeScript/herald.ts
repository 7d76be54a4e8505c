// A TypeScript client for `herald serve` (docs/http-api.md), on the platform's `fetch` only:
// Node 18+, Deno, Bun and browsers. No dependencies.
//
//   const herald = new Herald({ baseURL: 'http://127.0.0.1:8686', token: process.env.HERALD_TOKEN! });
//   const { report, replayed } = await herald.send({ type: 'ready', title: 'Build finished' });
//   const event = await herald.waitForAction(report.id, 120);           // approve / deny, or null
//   for await (const e of herald.events({ namespace: 'default' })) { … } // resumes with Last-Event-ID

/** A notification (contract §4); `id` is filled in before the first attempt when absent. */
export interface Notification {
  id?: string;
  namespace?: string;
  type?: string;
  title?: string;
  body?: string;
  severity?: 'info' | 'success' | 'warning' | 'error';
  url?: string;
  tag?: string;
  data?: Record<string, string>;
  actions?: { id: string; title: string; destructive?: boolean; url?: string }[];
  [key: string]: unknown;
}

/** One delivery of a report: `outcome` is delivered, dead, retry, failed or suppressed. */
export interface Delivery {
  channel: string;
  deviceId?: string;
  platform?: string;
  outcome: 'delivered' | 'dead' | 'retry' | 'failed' | 'suppressed';
  status?: number;
  reason?: string;
  attempt?: number;
  nextAttemptAt?: string;
}

/** The answer to a send: the delivery report, or `planned` with `wait: 'none'`. */
export interface SendAnswer {
  id: string;
  namespace: string;
  deliveries?: Delivery[];
  planned?: number;
}

/** A lifecycle event as Herald stores it. */
export interface LifecycleEvent {
  kind: 'received' | 'tapped' | 'dismissed' | 'action';
  actionId?: string;
  actionData?: Record<string, string>;
  deviceId?: string;
  at: string;
}

/** One Server-Sent Event of `GET /v1/events`; `data` is parsed JSON. */
export interface StreamEvent {
  id: string | null;
  event: string;
  data: unknown;
}

/** An answer that retrying will not change (a 4xx other than 408/429), with Herald's error body. */
export class HeraldError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    message: string,
    readonly field?: string,
  ) {
    super(`HTTP ${status}${code ? ` ${code}` : ''}: ${message}`);
  }

  static async from(response: Response): Promise<HeraldError> {
    const text = await response.text();
    try {
      const e = JSON.parse(text).error ?? {};
      return new HeraldError(response.status, e.code, e.message ?? text, e.field);
    } catch {
      return new HeraldError(response.status, undefined, text.slice(0, 200));
    }
  }
}

export interface HeraldOptions {
  /** `http://127.0.0.1:8686`, or your TLS front. */
  baseURL: string;
  /** A token from `herald tokens new`. */
  token: string;
  /** Per-request timeout for sends and registrations (ms). Default 30 s. */
  timeoutMs?: number;
  /** Attempts of an idempotent request before giving up. Default 5. */
  attempts?: number;
}

// AbortSignal.timeout (Node 17.3+, every current browser), reached through a cast so that TypeScript
// versions whose DOM library does not declare it yet (before 4.9) compile this file too.
const timeoutSignal = (ms: number): AbortSignal =>
  (AbortSignal as unknown as { timeout(ms: number): AbortSignal }).timeout(ms);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const jitter = (ms: number) => ms * (0.5 + Math.random() / 2);

export class Herald {
  private readonly base: string;
  private readonly timeoutMs: number;
  private readonly attempts: number;

  constructor(private readonly options: HeraldOptions) {
    this.base = options.baseURL.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.attempts = options.attempts ?? 5;
  }

  private headers(json: boolean): Record<string, string> {
    const h: Record<string, string> = { Authorization: `Bearer ${this.options.token}` };
    if (json) h['Content-Type'] = 'application/json';
    return h;
  }

  /**
   * A request that is safe to repeat, retried on network errors, timeouts, 408, 429 (after
   * `Retry-After`) and 5xx with jittered exponential backoff.
   */
  private async idempotent(method: string, path: string, body: unknown): Promise<Response> {
    let delay = 500;
    for (let attempt = 1; ; attempt++) {
      let response: Response | undefined;
      let failure: unknown;
      try {
        response = await fetch(this.base + path, {
          method,
          headers: this.headers(true),
          body: JSON.stringify(body),
          signal: timeoutSignal(this.timeoutMs),
        });
      } catch (error) {
        failure = error; // connection refused or reset, DNS, timeout: the request may or may not have arrived
      }
      const retryable = !response || response.status === 408 || response.status === 429 || response.status >= 500;
      if (response && !retryable) return response;
      if (attempt >= this.attempts) {
        if (response) throw await HeraldError.from(response);
        throw failure;
      }
      let wait = jitter(delay);
      const after = Number(response?.headers.get('Retry-After'));
      if (Number.isFinite(after) && after > 0) wait = Math.max(wait, after * 1000);
      await response?.body?.cancel();
      await sleep(wait);
      delay = Math.min(delay * 2, 10_000);
    }
  }

  /**
   * Sends a notification exactly once. The `id` is fixed before the first attempt, so a retry
   * after a timeout or a dropped connection is recognised by Herald and not routed again (its
   * answer carries `Herald-Replayed: true`). `wait: 'none'` returns as soon as it is stored (202).
   */
  async send(notification: Notification, opts: { wait?: 'none' } = {}): Promise<{ report: SendAnswer; replayed: boolean }> {
    const body = { ...notification, id: notification.id ?? crypto.randomUUID() };
    const path = '/v1/notifications' + (opts.wait === 'none' ? '?wait=none' : '');
    const response = await this.idempotent('POST', path, body);
    if (response.status !== 200 && response.status !== 202) throw await HeraldError.from(response);
    return { report: (await response.json()) as SendAnswer, replayed: response.headers.get('Herald-Replayed') === 'true' };
  }

  /** Registers (upserts) a device; registrations are idempotent too. */
  async register(device: Record<string, unknown>): Promise<unknown> {
    const response = await this.idempotent('POST', '/v1/devices', device);
    if (response.status !== 200) throw await HeraldError.from(response);
    return response.json();
  }

  /**
   * The first `action` event of a notification (at once if one is recorded already), or null
   * after `seconds`. Long-polls in requests of at most 300 s, Herald's limit.
   */
  async waitForAction(id: string, seconds = 30): Promise<LifecycleEvent | null> {
    const deadline = Date.now() + seconds * 1000;
    for (;;) {
      const left = Math.max(0, Math.min(300, Math.ceil((deadline - Date.now()) / 1000)));
      const response = await fetch(`${this.base}/v1/notifications/${encodeURIComponent(id)}/action?timeout=${left}`, {
        headers: this.headers(false),
        signal: timeoutSignal((left + 15) * 1000),
      });
      if (response.status === 200) return ((await response.json()) as { event: LifecycleEvent }).event;
      if (response.status !== 204) throw await HeraldError.from(response);
      if (Date.now() >= deadline - 500) return null;
    }
  }

  /**
   * The event stream, forever (break out of the loop to stop). Node's `fetch` has no
   * `EventSource`, so this reads `text/event-stream` from the response body. After a disconnect
   * it reconnects with `Last-Event-ID` = the last id it yielded: every event once, in order.
   * `since` starts after that id (0: from the oldest stored event); without it, live events only.
   */
  async *events(opts: { namespace?: string; since?: number; signal?: AbortSignal } = {}): AsyncGenerator<StreamEvent> {
    let lastId: string | null = opts.since === undefined ? null : String(opts.since);
    let delay = 500;
    const query = opts.namespace ? `?namespace=${encodeURIComponent(opts.namespace)}` : '';
    while (!opts.signal?.aborted) {
      try {
        const headers: Record<string, string> = { ...this.headers(false), Accept: 'text/event-stream' };
        if (lastId !== null) headers['Last-Event-ID'] = lastId;
        const response = await fetch(`${this.base}/v1/events${query}`, { headers, signal: opts.signal });
        if (response.status !== 200) {
          const error = await HeraldError.from(response);
          if (response.status < 500 && response.status !== 429) throw error; // auth or namespace: retrying will not help
          throw new Error(error.message);
        }
        if (!response.body) throw new Error('no body');
        delay = 500;
        for await (const event of parseEventStream(response.body)) {
          if (event.id !== null) lastId = event.id;
          yield event;
        }
        // The server ended the stream (it is stopping): reconnect.
      } catch (error) {
        if (error instanceof HeraldError || opts.signal?.aborted) throw error;
        console.error(`herald: event stream: ${String(error)}; reconnecting`);
      }
      await sleep(jitter(delay));
      delay = Math.min(delay * 2, 10_000);
    }
  }
}

/**
 * Parses `text/event-stream` (the WHATWG rules Herald's stream uses): `id`, `event`, `data` lines
 * (several `data` lines joined with a newline), `:` comments skipped, a blank line dispatches.
 */
export async function* parseEventStream(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamEvent> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let id: string | null = null;
  let type = '';
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let match: RegExpExecArray | null;
      while ((match = /\r\n|\r|\n/.exec(buffer)) !== null) {
        if (match[0] === '\r' && match.index === buffer.length - 1) break; // maybe half of \r\n
        const line = buffer.slice(0, match.index);
        buffer = buffer.slice(match.index + match[0].length);
        if (line === '') {
          if (data.length > 0) yield { id, event: type || 'message', data: JSON.parse(data.join('\n')) };
          type = '';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'id' && !value.includes('\0')) id = value;
        else if (field === 'event') type = value;
        else if (field === 'data') data.push(value);
      }
    }
  } finally {
    reader.releaseLock();
  }
}
