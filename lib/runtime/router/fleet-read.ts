import * as crypto from 'crypto';
import * as http from 'http';

/** A cell a fleet-wide read asks: the mapping in force's id and endpoint. */
export interface FleetReadCell {
  readonly id: string;
  readonly endpoint: string;
}

export interface FleetReadOptions {
  /** The cells to ask, read at each request: the active cells of the mapping in force. */
  readonly cells: () => readonly FleetReadCell[];
  /** What a caller sends as `authorization: Bearer <token>`; anything else is 401. */
  readonly token: string;
  /** The whole read's deadline when the request names none (`?deadlineMs=`). @default 2000 */
  readonly deadlineMs?: number;
  /** The longest deadline a request may ask for. @default 30000 */
  readonly maxDeadlineMs?: number;
  /** Cells asked at once. @default 8 */
  readonly concurrency?: number;
  /** What is kept of one cell's answer; a longer one is cut and marked. @default 256 KiB */
  readonly maxBodyBytes?: number;
  /**
   * What one read keeps of all the answers together, shared evenly by the cells asked: the agent
   * runs in the router task's memory budget. @default 16 MiB
   */
  readonly maxTotalBytes?: number;
}

/** One cell's answer. */
export interface CellAnswer {
  readonly cell: string;
  readonly status: number;
  readonly ms: number;
  /** Parsed when the cell answered JSON, else the text. */
  readonly body: unknown;
  /** The answer was longer than maxBodyBytes and was cut (`body` is then the text kept). */
  readonly truncated?: boolean;
}

/** A cell that gave no answer before the deadline, and why. */
export interface MissingCell {
  readonly cell: string;
  readonly reason: string;
}

/** A fleet-wide read: every cell's answer, and the cells without one; `partial` whenever any is missing. */
export interface FleetReadAnswer {
  readonly path: string;
  readonly partial: boolean;
  readonly deadlineMs: number;
  readonly asked: number;
  readonly cells: readonly CellAnswer[];
  readonly missing: readonly MissingCell[];
}

export const FLEET_READ_PREFIX = '/fleet';
const MAX_PATH = 1024;

/** Why a path cannot be asked of the cells (undefined when it can): an absolute path, no `..`, printable. */
export function fleetReadPathProblem(p: string): string | undefined {
  if (!p.startsWith('/')) return `${p}: the path must start with /`;
  if (p.length > MAX_PATH) return `the path is ${p.length} characters; at most ${MAX_PATH}`;
  if (/[\s\\]|%2e|%2f|%5c/i.test(p) || /(^|\/)\.\.?(\/|$|\?)/.test(p)) return `${p}: no spaces, backslashes, dot segments or encoded separators`;
  if (!/^[\x21-\x7e]+$/.test(p)) return `${p}: printable ASCII only`;
  return undefined;
}

async function askCell(cell: FleetReadCell, p: string, signal: AbortSignal, maxBodyBytes: number): Promise<CellAnswer> {
  const started = Date.now();
  const response = await fetch(`${cell.endpoint.replace(/\/$/, '')}${p}`, { signal, headers: { 'x-fleet-read': '1' }, redirect: 'manual' });
  const reader = response.body?.getReader();
  const chunks: Buffer[] = [];
  let bytes = 0;
  let truncated = false;
  while (reader) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(Buffer.from(value));
    bytes += value.byteLength;
    if (bytes > maxBodyBytes) {
      truncated = true;
      await reader.cancel();
      break;
    }
  }
  const text = Buffer.concat(chunks).subarray(0, maxBodyBytes).toString('utf8');
  let body: unknown = text;
  if (!truncated && /json/.test(response.headers.get('content-type') ?? '')) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  return { cell: cell.id, status: response.status, ms: Date.now() - started, body, ...(truncated ? { truncated } : {}) };
}

/**
 * Asks every cell for `p` at once, `concurrency` at a time, and answers by the deadline whatever
 * has come back: a cell still answering then, or not yet asked, is in `missing` with the reason,
 * and the answer is `partial`. A cell's error status is an answer (its status says so); a refused
 * or reset connection is a missing cell.
 */
export async function fleetRead(
  p: string,
  cells: readonly FleetReadCell[],
  o: { readonly deadlineMs: number; readonly concurrency?: number; readonly maxBodyBytes?: number; readonly maxTotalBytes?: number },
): Promise<FleetReadAnswer> {
  // Each cell's part of the total, so 400 cells' answers stay within the task's budget.
  const perCell = Math.min(o.maxBodyBytes ?? 256 * 1024, Math.floor((o.maxTotalBytes ?? 16 * 1024 * 1024) / Math.max(1, cells.length)));
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), o.deadlineMs);
  const answers: CellAnswer[] = [];
  const missing: MissingCell[] = [];
  let next = 0;
  const worker = async () => {
    while (next < cells.length) {
      const cell = cells[next++];
      if (deadline.signal.aborted) {
        missing.push({ cell: cell.id, reason: `not asked before the ${o.deadlineMs} ms deadline` });
        continue;
      }
      try {
        answers.push(await askCell(cell, p, deadline.signal, perCell));
      } catch (error) {
        const e = error as Error & { cause?: { code?: string } };
        missing.push({
          cell: cell.id,
          reason: deadline.signal.aborted
            ? `no answer within the ${o.deadlineMs} ms deadline`
            : e.cause?.code
              ? `${e.cause.code} connecting to ${cell.endpoint}`
              : `${e.name}: ${e.message}`,
        });
      }
    }
  };
  // Ends at the deadline even if a cell's socket ignores the abort: the workers are raced against it.
  const ended = new Promise<void>((resolve) => deadline.signal.addEventListener('abort', () => resolve(), { once: true }));
  await Promise.race([Promise.all(Array.from({ length: Math.min(o.concurrency ?? 8, Math.max(1, cells.length)) }, worker)), ended]);
  clearTimeout(timer);
  deadline.abort();
  const done = new Set([...answers.map((a) => a.cell), ...missing.map((m) => m.cell)]);
  for (const c of cells) if (!done.has(c.id)) missing.push({ cell: c.id, reason: `no answer within the ${o.deadlineMs} ms deadline` });
  const byId = (a: { cell: string }, b: { cell: string }) => a.cell.localeCompare(b.cell);
  return {
    path: p,
    partial: missing.length > 0,
    deadlineMs: o.deadlineMs,
    asked: cells.length,
    cells: [...answers].sort(byId),
    missing: [...missing].sort(byId),
  };
}

const sameToken = (given: string, token: string) => {
  const a = crypto.createHash('sha256').update(given).digest();
  const b = crypto.createHash('sha256').update(token).digest();
  return crypto.timingSafeEqual(a, b);
};

/**
 * The router's fleet-wide read listener: `GET /fleet/<path>[?deadlineMs=N]` with the bearer token
 * asks every active cell for `<path>` (fleetRead) and answers JSON, 200 with `partial` in the body
 * and `x-fleet-partial: true|false`. It listens apart from the tenants' frontend, never behind
 * the load balancer: tenants cannot reach it.
 */
export function fleetReadServer(o: FleetReadOptions): http.Server {
  if (o.token.length < 16) throw new Error('the fleet-read token must be at least 16 characters');
  const defaultDeadline = o.deadlineMs ?? 2000;
  const maxDeadline = o.maxDeadlineMs ?? 30_000;
  const answer = (res: http.ServerResponse, status: number, body: unknown, partial?: boolean) => {
    res.writeHead(status, { 'content-type': 'application/json', ...(partial === undefined ? {} : { 'x-fleet-partial': String(partial) }) });
    res.end(`${JSON.stringify(body)}\n`);
  };
  return http.createServer((req, res) => {
    void (async () => {
      const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (!auth || !sameToken(auth, o.token))
        return answer(res, 401, { error: 'a fleet-wide read needs the bearer token of this router (fleet-read token)' });
      if (req.method !== 'GET') return answer(res, 405, { error: 'a fleet-wide read is a GET' });
      // Checked as sent: URL parsing would resolve an encoded dot segment before the check saw it.
      const raw = req.url ?? '/';
      if (raw.startsWith(`${FLEET_READ_PREFIX}/`)) {
        const sent = fleetReadPathProblem(raw.slice(FLEET_READ_PREFIX.length));
        if (sent) return answer(res, 400, { error: sent });
      }
      const url = new URL(raw, 'http://fleet-read');
      if (!url.pathname.startsWith(`${FLEET_READ_PREFIX}/`)) return answer(res, 404, { error: `ask ${FLEET_READ_PREFIX}/<path of the cells>` });
      const deadlineText = url.searchParams.get('deadlineMs');
      url.searchParams.delete('deadlineMs');
      const deadlineMs = deadlineText === null ? defaultDeadline : Number(deadlineText);
      if (!Number.isInteger(deadlineMs) || deadlineMs < 1 || deadlineMs > maxDeadline) {
        return answer(res, 400, { error: `deadlineMs ${deadlineText}: give whole milliseconds from 1 to ${maxDeadline}` });
      }
      const cellPath = `${url.pathname.slice(FLEET_READ_PREFIX.length)}${url.search}`;
      const problem = fleetReadPathProblem(cellPath);
      if (problem) return answer(res, 400, { error: problem });
      const result = await fleetRead(cellPath, o.cells(), {
        deadlineMs,
        concurrency: o.concurrency,
        maxBodyBytes: o.maxBodyBytes,
        maxTotalBytes: o.maxTotalBytes,
      });
      answer(res, 200, result, result.partial);
    })().catch((error: Error) => answer(res, 500, { error: error.message }));
  });
}
