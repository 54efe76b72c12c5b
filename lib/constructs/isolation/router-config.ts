/**
 * What a router's HAProxy configuration may do per request: extract the key, hash it, look it up
 * and forward to that one cell, or answer itself (400 bad key, 503 no mapping / frozen / saturated,
 * 307 to the cell's own region for a cell this region does not link).
 * Anything else is logic in the router, which the seeds list as a way the cell boundary erodes,
 * and a retry or redispatch sends a request a second time, possibly to another cell.
 */

import { ROUTED_KEY_HEADER } from '../../domain/fleet/defaults';

/** `http-request` actions that only pick a backend or answer: no rewriting, no scripts, no calls out. */
const REQUEST_ACTIONS = new Set([
  'return',
  'deny',
  'set-var',
  'unset-var',
  'capture',
  'track-sc0',
  'track-sc1',
  'track-sc2',
  'sc-set-gpt0',
  'sc-inc-gpc0',
  'sc-inc-gpc1',
  'set-log-level',
  // Holds the request until its body is in the buffer (what `option http-buffer-request` does,
  // bounded by a time): a slow body waits in the router, never in a cell. Reading the body's
  // content (a `req.body` fetch) stays a finding.
  'wait-for-body',
  // The order a saturated cell's queue serves its waiting requests in (max-min fairness between
  // tenants): it never sends a request anywhere else, nor a second time.
  'set-priority-class',
]);
/**
 * Headers the router may set on a request: the client's address and scheme (replacing whatever the
 * client sent) and the partition key it routed by (the header the cell's WAF rate rule keys on).
 * `set-header`, or `add-header` after a `del-header` of the same section that removes the client's
 * copies. Removing a header (`del-header`) is always allowed: it cannot send a request anywhere else.
 */
const SET_HEADERS = new Set(['x-forwarded-for', 'x-forwarded-proto', ROUTED_KEY_HEADER]);
/** Response-side actions: decorating the answer (debug headers) only. */
const RESPONSE_ACTIONS = new Set(['set-header', 'add-header', 'del-header', 'set-log-level', 'set-var', 'return']);
/** Services a frontend may hand requests to: the metrics exporter on the stats port. */
const SERVICES = new Set(['prometheus-exporter']);

/** One directive of the configuration, with its section and line number (1-based). */
interface Directive {
  readonly section: string;
  readonly line: number;
  readonly words: readonly string[];
}

function directives(config: string): Directive[] {
  const out: Directive[] = [];
  let section = '';
  config.split('\n').forEach((raw, i) => {
    const text = raw.replace(/(^|\s)#.*$/, '').trim();
    if (!text) return;
    const words = text.split(/\s+/);
    if (/^\S/.test(raw)) {
      section = `${words[0]}${words[1] ? ` ${words[1]}` : ''}`;
      return;
    }
    out.push({ section, line: i + 1, words });
  });
  return out;
}

/** Whether an `http-request del-header` of `at`'s section, before it, removes header `name` (exact, or `-m reg|beg|str`). */
function removedBefore(ds: readonly Directive[], at: Directive, name: string): boolean {
  return ds.some((d) => {
    if (d.section !== at.section || d.line >= at.line || d.words[0] !== 'http-request' || d.words[1] !== 'del-header') return false;
    const [pattern, flag, method] = d.words.slice(2);
    if (flag !== '-m') return pattern.toLowerCase() === name;
    if (method === 'beg') return name.startsWith(pattern.toLowerCase());
    if (method === 'str') return pattern.toLowerCase() === name;
    if (method !== 'reg') return false;
    try {
      return new RegExp(pattern).test(name);
    } catch {
      return false;
    }
  });
}

/** `http-request redirect location %[be_name,map(<dir>/away.map)]%[pathq] code 307`, and nothing else. */
function isAwayRedirect(words: readonly string[]): boolean {
  return (
    words.length === 6 &&
    words[2] === 'location' &&
    /^%\[be_name,map\([^()\s]*\/away\.map\)\]%\[pathq\]$/.test(words[3]) &&
    words[4] === 'code' &&
    words[5] === '307'
  );
}

/** One problem: a short code (the finding id) and what is wrong where. */
export interface RouterConfigProblem {
  readonly code: string;
  readonly message: string;
}

/**
 * Problems with a router configuration; empty when it routes only by key. Pure: the pack runs it
 * on the configuration the router image is built with, tests on configurations broken on purpose.
 */
export function routerConfigProblems(config: string): RouterConfigProblem[] {
  const problems: RouterConfigProblem[] = [];
  const ds = directives(config);
  const say = (d: Directive, code: string, what: string) => problems.push({ code, message: `line ${d.line} (${d.section}): ${what}` });
  if (!ds.some((d) => d.section.startsWith('defaults') && d.words[0] === 'retries')) {
    problems.push({ code: 'retries', message: 'no `retries 0` in defaults: HAProxy retries a failed connection 3 times by default' });
  }
  const servers = new Map<string, number>();
  const zonal = new Map<string, number>();
  for (const d of ds) {
    const [first, second, third] = d.words;
    if (first === 'retries' && Number(second) !== 0)
      say(d, 'retries', `\`retries ${second}\`: a request must never be sent twice; use \`retries 0\``);
    if (first === 'retry-on' && second !== 'none') say(d, 'retry-on', `\`retry-on ${d.words.slice(1).join(' ')}\` retries requests`);
    if (first === 'option' && second === 'redispatch')
      say(d, 'redispatch', '`option redispatch` sends a request to another server when its own fails');
    if (first.startsWith('lua-') || d.words.some((w) => w.startsWith('lua.'))) say(d, 'lua', 'Lua: scripts are logic in the router');
    if (first === 'filter') say(d, 'filter', `\`filter ${second}\` processes requests in the router`);
    if (first === 'http-request' || first === 'tcp-request') {
      // `set-var(txn.x)`: the action is the name before its arguments.
      const action = (first === 'tcp-request' ? third : second)?.replace(/\(.*$/, '');
      if (action === 'use-service') {
        const service = d.words[first === 'tcp-request' ? 3 : 2];
        if (!SERVICES.has(service)) say(d, 'use-service', `\`use-service ${service}\` serves requests from the router`);
      } else if (first === 'http-request' && action === 'set-header' && SET_HEADERS.has(third ?? '')) {
        // the router's own identity headers
      } else if (first === 'http-request' && action === 'add-header' && SET_HEADERS.has(third ?? '')) {
        if (!removedBefore(ds, d, third!))
          say(
            d,
            'request-add-header',
            `\`http-request add-header ${third}\` with no \`del-header\` before it removing the client's ${third}: the cell would see both`,
          );
      } else if (first === 'http-request' && action === 'redirect' && /^backend away\d+$/.test(d.section) && isAwayRedirect(d.words)) {
        // router.reach: the answer for a cell this region does not link, a 307 to the cell's own
        // region (the URL from the away map, the request's path and query); nothing is sent to any cell.
      } else if (first === 'http-request' && action === 'del-header') {
        // removing client-sent headers only narrows what reaches the cell
      } else if (first === 'http-request' && !REQUEST_ACTIONS.has(action ?? '')) {
        say(d, `request-${action}`, `\`http-request ${action}\` changes or handles requests beyond key, hash and lookup`);
      }
    }
    const responseAction = second?.replace(/\(.*$/, '');
    if ((first === 'http-response' || first === 'http-after-response') && !RESPONSE_ACTIONS.has(responseAction ?? '')) {
      say(d, `response-${responseAction}`, `\`${first} ${responseAction}\` changes responses beyond headers`);
    }
    // The body's length (to refuse what does not fit the buffer) is not its content.
    if (d.words.some((w) => /(^|[,({[])req\.body(?!_len\b|_size\b)/.test(w))) say(d, 'body', 'reads the request body');
    if (first === 'server-template') say(d, 'servers', '`server-template` puts several servers (cells) behind one backend');
    if (first === 'server') {
      if (d.words.includes('backup')) say(d, 'backup', "a backup server receives a cell's requests when it is down");
      // z0, z1, …: the zonal servers of one cell's endpoint (the agent points them all at the
      // addresses of that one endpoint); any other name is another server.
      if (!/^z\d+$/.test(second ?? '')) servers.set(d.section, (servers.get(d.section) ?? 0) + 1);
      else zonal.set(d.section, (zonal.get(d.section) ?? 0) + 1);
    }
  }
  for (const [section, count] of servers) {
    if (count + (zonal.get(section) ?? 0) > 1)
      problems.push({
        code: 'servers',
        message: `${section}: ${count} servers besides its zonal ones; a backend is one cell (one server per zone of its endpoint), or requests spread over cells`,
      });
  }
  return problems;
}
