import * as net from 'net';

/**
 * HAProxy's Runtime API over its admin socket: one connection per command (non-interactive mode),
 * the answer is everything HAProxy writes before it closes the connection.
 */
export class RuntimeApi {
  /** `address`: a unix socket path, or `host:port` for a TCP admin socket (shared localhost in a task). */
  constructor(
    private readonly address: string,
    private readonly timeoutMs = 5000,
  ) {}

  /** Sends one command (a `<<` payload may follow on the next lines) and returns HAProxy's answer. */
  public send(command: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const tcp = /^([\w.-]+):(\d+)$/.exec(this.address);
      const socket = tcp ? net.createConnection({ host: tcp[1], port: Number(tcp[2]) }) : net.createConnection({ path: this.address });
      const chunks: Buffer[] = [];
      socket.setTimeout(this.timeoutMs, () =>
        socket.destroy(new Error(`HAProxy runtime API: no answer to \`${command.split('\n')[0]}\` within ${this.timeoutMs} ms`)),
      );
      socket.on('connect', () => socket.end(command.endsWith('\n') ? command : `${command}\n`));
      socket.on('data', (chunk) => chunks.push(chunk));
      socket.on('error', reject);
      socket.on('close', (hadError) => {
        if (!hadError) resolve(Buffer.concat(chunks).toString('utf8'));
      });
    });
  }

  /**
   * Sends one command and hands HAProxy's answer to `onLine` line by line as it arrives, keeping
   * none of it: a map of 100,000 entries is read back without holding its text, its lines or a copy.
   */
  public sendLines(command: string, onLine: (line: string) => void): Promise<void> {
    return new Promise((resolve, reject) => {
      const tcp = /^([\w.-]+):(\d+)$/.exec(this.address);
      const socket = tcp ? net.createConnection({ host: tcp[1], port: Number(tcp[2]) }) : net.createConnection({ path: this.address });
      let partial = '';
      let failed: Error | undefined;
      socket.setEncoding('utf8');
      socket.setTimeout(this.timeoutMs, () =>
        socket.destroy(new Error(`HAProxy runtime API: no answer to \`${command.split('\n')[0]}\` within ${this.timeoutMs} ms`)),
      );
      socket.on('connect', () => socket.end(command.endsWith('\n') ? command : `${command}\n`));
      socket.on('data', (chunk: string) => {
        const lines = (partial + chunk).split('\n');
        partial = lines.pop()!;
        try {
          for (const line of lines) onLine(line);
        } catch (error) {
          failed = error as Error;
          socket.destroy();
        }
      });
      socket.on('error', reject);
      socket.on('close', (hadError) => {
        if (failed) reject(failed);
        else if (!hadError) {
          try {
            if (partial) onLine(partial);
            resolve();
          } catch (error) {
            reject(error);
          }
        }
      });
    });
  }

  /** Sends a command whose success is an empty answer (or a known success line); throws otherwise. */
  public async expectOk(command: string, ok: RegExp = /^\s*$/): Promise<void> {
    const answer = await this.send(command);
    if (!ok.test(answer)) throw new Error(`HAProxy refused \`${command.split('\n')[0]}\`: ${answer.trim()}`);
  }

  /** `show info` as a record. */
  public async info(): Promise<Record<string, string>> {
    const answer = await this.send('show info');
    return Object.fromEntries(
      answer
        .split('\n')
        .filter((l) => l.includes(':'))
        .map((l) => {
          const i = l.indexOf(':');
          return [l.slice(0, i).trim(), l.slice(i + 1).trim()];
        }),
    );
  }

  /** A variable of HAProxy's environment (`setenv` in its configuration), or undefined when it has none. */
  public async env(name: string): Promise<string | undefined> {
    const answer = await this.send(`show env ${name}`);
    const line = answer.split('\n').find((l) => l.startsWith(`${name}=`));
    return line?.slice(name.length + 1);
  }

  /** `show stat` rows (CSV with a `# pxname,svname,…` header) as records. */
  public async stats(): Promise<Record<string, string>[]> {
    const answer = await this.send('show stat');
    const [header, ...rows] = answer.trim().split('\n');
    const columns = header.replace(/^# /, '').split(',');
    return rows.filter(Boolean).map((row) => {
      const values = row.split(',');
      return Object.fromEntries(columns.map((c, i) => [c, values[i] ?? '']));
    });
  }

  /** Every entry of a map's current version, as `key → value`. */
  public async showMap(map: string): Promise<Map<string, string>> {
    const answer = await this.send(`show map ${map}`);
    const entries = new Map<string, string>();
    for (const line of answer.split('\n')) {
      // "0x55d1c… key value"
      const match = /^0x[0-9a-f]+ (\S+) (\S+)$/.exec(line.trim());
      if (match) entries.set(match[1], match[2]);
    }
    return entries;
  }
}
