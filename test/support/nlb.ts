import * as net from 'net';
import { AddressInfo } from 'net';

/**
 * A stand-in for a Network Load Balancer with one TCP listener and one IP target group, behaving as
 * the Elastic Load Balancing documentation says (NLB User Guide, "Target groups for your Network
 * Load Balancers": health checks, proxy protocol, registration, deregistration delay):
 * - with proxy protocol v2 on, the PROXY header opens every connection to a target, traffic and
 *   health checks alike;
 * - a registered target gets new connections only once `healthyThreshold` consecutive health checks
 *   passed (HTTP: status 200–399 within the timeout), and stops getting them after
 *   `unhealthyThreshold` failures (open connections are not cut: connection termination off);
 * - a deregistered target is draining: no new connections, its open ones carry on, and the
 *   deregistration resolves when `deregistrationDelayMs` has passed (then ECS sends the stop signal).
 * With no healthy target a new connection is refused (reset), where the real NLB fails open to every
 * target; the tests here register one target, so a reset means "no healthy target".
 */
export interface NlbHealthCheck {
  readonly path: string;
  readonly port: number;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly healthyThreshold: number;
  readonly unhealthyThreshold: number;
}

export interface NlbOptions {
  readonly healthCheck: NlbHealthCheck;
  readonly proxyProtocolV2: boolean;
  readonly deregistrationDelayMs: number;
  /** The client address the PROXY header carries. */
  readonly client?: { readonly address: string; readonly port: number };
  /** The listener port the PROXY header carries as destination. @default 443 */
  readonly listenerPort?: number;
}

export type TargetState = 'initial' | 'healthy' | 'unhealthy' | 'draining' | 'unused';

/** The 16 bytes of an IPv6 address (full or with `::`; no embedded IPv4). */
function ipv6Bytes(address: string): Buffer {
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const groups = (s: string | undefined) => (s ? s.split(':') : []);
  const missing = 8 - groups(head).length - groups(tail).length;
  const all = [...groups(head), ...(tail === undefined ? [] : Array(missing).fill('0')), ...groups(tail)];
  const bytes = Buffer.alloc(16);
  all.forEach((g, i) => bytes.writeUInt16BE(parseInt(g, 16), i * 2));
  return bytes;
}

/**
 * The PROXY protocol v2 header for a connection from `client` to `listenerPort`: TCP over IPv4, or
 * over IPv6 when the client's address is one (as an NLB with a dualstack listener sends).
 */
export function proxyV2Header(client = { address: '198.51.100.7', port: 40000 }, listenerPort = 443, destination = '10.0.0.1'): Buffer {
  if (client.address.includes(':')) {
    const header = Buffer.alloc(52);
    Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]).copy(header, 0);
    header[12] = 0x21; // version 2, PROXY
    header[13] = 0x21; // TCP over IPv6
    header.writeUInt16BE(36, 14);
    ipv6Bytes(client.address).copy(header, 16);
    ipv6Bytes(destination.includes(':') ? destination : '2001:db8::a00:1').copy(header, 32);
    header.writeUInt16BE(client.port, 48);
    header.writeUInt16BE(listenerPort, 50);
    return header;
  }
  const header = Buffer.alloc(28);
  Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]).copy(header, 0);
  header[12] = 0x21; // version 2, PROXY
  header[13] = 0x11; // TCP over IPv4
  header.writeUInt16BE(12, 14);
  client.address.split('.').forEach((octet, i) => {
    header[16 + i] = Number(octet);
  });
  destination.split('.').forEach((octet, i) => {
    header[20 + i] = Number(octet);
  });
  header.writeUInt16BE(client.port, 24);
  header.writeUInt16BE(listenerPort, 26);
  return header;
}

/**
 * One HTTP GET as the NLB's health checker sends it: a new connection, the PROXY v2 header first when
 * `proxy` (as it is once the target group has proxy protocol on), `Connection: close`.
 */
export function healthCheckGet(
  port: number,
  path: string,
  o: { proxy: boolean; timeoutMs: number; host?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection({ host: o.host ?? '127.0.0.1', port });
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${o.timeoutMs} ms`));
    }, o.timeoutMs);
    socket.on('connect', () => {
      // The health checker's own address: a private address of the load balancer in the subnet.
      if (o.proxy) socket.write(proxyV2Header({ address: '10.0.0.9', port: 51000 }, port, '10.0.0.1'));
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 10.0.0.1:${port}\r\nUser-Agent: ELB-HealthChecker/2.0\r\nConnection: close\r\n\r\n`);
    });
    socket.on('data', (d: Buffer) => {
      data += d.toString('latin1');
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(data);
      if (!m) reject(new Error(data ? `not an HTTP answer: ${JSON.stringify(data.slice(0, 80))}` : 'connection closed without an answer'));
      else resolve({ status: Number(m[1]), body: data.slice(data.indexOf('\r\n\r\n') + 4) });
    });
  });
}

interface Target {
  readonly host: string;
  readonly port: number;
  state: TargetState;
  passes: number;
  failures: number;
  lastCheck: string;
  timer?: NodeJS.Timeout;
  readonly connections: Set<net.Socket>;
}

export class NlbStandIn {
  static async start(options: NlbOptions): Promise<NlbStandIn> {
    const nlb = new NlbStandIn(options);
    await new Promise<void>((resolve) => nlb.server.listen(0, '127.0.0.1', resolve));
    return nlb;
  }

  private readonly server: net.Server;
  private readonly targets: Target[] = [];
  private readonly sockets = new Set<net.Socket>();
  /** Health-check results, newest last: `200`, `503`, or the connection error. */
  readonly checks: string[] = [];
  /** New connections refused for want of a healthy target. */
  refused = 0;

  private constructor(private readonly o: NlbOptions) {
    this.server = net.createServer((downstream) => this.accept(downstream));
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Registers a target: it is health-checked at once and then every interval, and gets traffic once healthy. */
  register(host: string, port: number): void {
    const target: Target = { host, port, state: 'initial', passes: 0, failures: 0, lastCheck: 'not checked yet', connections: new Set() };
    this.targets.push(target);
    const retired = () => target.state === 'draining' || target.state === 'unused';
    const check = async () => {
      if (retired()) return;
      const hc = this.o.healthCheck;
      let ok = false;
      try {
        const answer = await healthCheckGet(hc.port, hc.path, { proxy: this.o.proxyProtocolV2, timeoutMs: hc.timeoutMs, host });
        ok = answer.status >= 200 && answer.status < 400;
        target.lastCheck = `${answer.status} ${answer.body.trim().slice(0, 200)}`;
      } catch (error) {
        target.lastCheck = (error as Error).message;
      }
      this.checks.push(target.lastCheck);
      // Deregistered while the check was out.
      if (retired()) return;
      if (ok) {
        target.failures = 0;
        target.passes += 1;
        if (target.passes >= hc.healthyThreshold) target.state = 'healthy';
      } else {
        target.passes = 0;
        target.failures += 1;
        if (target.state === 'healthy' && target.failures >= hc.unhealthyThreshold) target.state = 'unhealthy';
      }
      target.timer = setTimeout(() => void check(), hc.intervalMs);
    };
    void check();
  }

  state(port: number): TargetState {
    return this.find(port).state;
  }

  /** The last health check's answer (status and body) or error, for a message. */
  lastCheck(port: number): string {
    return this.find(port).lastCheck;
  }

  /** Open connections to a target. */
  openConnections(port: number): number {
    return this.find(port).connections.size;
  }

  /**
   * Deregisters a target: draining at once (no new connections; open ones carry on), `unused` when
   * the deregistration delay has passed. Resolves then: the moment ECS sends the stop signal.
   */
  async deregister(port: number): Promise<void> {
    const target = this.find(port);
    target.state = 'draining';
    clearTimeout(target.timer);
    await new Promise((r) => setTimeout(r, this.o.deregistrationDelayMs));
    target.state = 'unused';
  }

  async close(): Promise<void> {
    for (const t of this.targets) clearTimeout(t.timer);
    this.sockets.forEach((s) => s.destroy());
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private find(port: number): Target {
    const target = this.targets.find((t) => t.port === port);
    if (!target) throw new Error(`NLB stand-in: no target on port ${port}`);
    return target;
  }

  private accept(downstream: net.Socket): void {
    this.sockets.add(downstream);
    const healthy = this.targets.filter((t) => t.state === 'healthy');
    if (healthy.length === 0) {
      this.refused += 1;
      downstream.resetAndDestroy();
      return;
    }
    const target = healthy[Math.floor(Math.random() * healthy.length)];
    const upstream = net.createConnection({ host: target.host, port: target.port });
    this.sockets.add(upstream);
    target.connections.add(downstream);
    if (this.o.proxyProtocolV2) upstream.write(proxyV2Header(this.o.client, this.o.listenerPort ?? 443));
    downstream.pipe(upstream).pipe(downstream);
    const close = () => {
      downstream.destroy();
      upstream.destroy();
      this.sockets.delete(downstream);
      this.sockets.delete(upstream);
      target.connections.delete(downstream);
    };
    downstream.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  }
}
