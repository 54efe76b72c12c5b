import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as zlib from 'zlib';

/** A decoded PNG: width, height and RGBA bytes. */
export interface Picture {
  readonly width: number;
  readonly height: number;
  readonly rgba: Buffer;
}

/** Headless chromium's screenshot of `file` at `width`×`height`, decoded. */
export function screenshot(file: string, out: string, width = 1400, height = 1100): Picture {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'chromium-profile-'));
  try {
    const run = spawnSync(
      'chromium',
      [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--hide-scrollbars',
        `--user-data-dir=${profile}`,
        `--window-size=${width},${height}`,
        `--screenshot=${out}`,
        `file://${file}`,
      ],
      { encoding: 'utf8', timeout: 120_000 },
    );
    if (!fs.existsSync(out)) throw new Error(`chromium wrote no screenshot (exit ${run.status}): ${run.stderr}`);
  } finally {
    fs.rmSync(profile, { recursive: true, force: true });
  }
  return decodePng(fs.readFileSync(out));
}

/**
 * Loads `file` in headless chromium at `width`×`height` and returns what `expression` (JavaScript,
 * evaluated once the page is laid out) gives, JSON-serialized: e.g. the page's scrollWidth.
 */
export function evaluateInPage<T>(file: string, expression: string, width = 1400, height = 1100): T {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chromium-eval-'));
  try {
    // The result goes into an attribute of <html>, base64 so that --dump-dom prints it unchanged.
    const probe = `<script>document.documentElement.setAttribute('data-probe', btoa(unescape(encodeURIComponent(JSON.stringify((() => (${expression}))())))));</script>`;
    const page = path.join(dir, path.basename(file));
    fs.writeFileSync(page, fs.readFileSync(file, 'utf8').replace(/<\/body>/, `${probe}</body>`));
    const run = spawnSync(
      'chromium',
      [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--hide-scrollbars',
        `--user-data-dir=${path.join(dir, 'profile')}`,
        `--window-size=${width},${height}`,
        '--dump-dom',
        `file://${page}`,
      ],
      { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
    );
    const encoded = /data-probe="([A-Za-z0-9+/=]*)"/.exec(run.stdout ?? '')?.[1];
    if (encoded === undefined) throw new Error(`chromium returned no result for ${expression} (exit ${run.status}): ${run.stderr}`);
    return JSON.parse(Buffer.from(encoded, 'base64').toString('utf8')) as T;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what chromium writes). */
export function decodePng(png: Buffer): Picture {
  if (png.readUInt32BE(0) !== 0x89504e47) throw new Error('not a PNG');
  let at = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const data: Buffer[] = [];
  while (at < png.length) {
    const length = png.readUInt32BE(at);
    const type = png.toString('ascii', at + 4, at + 8);
    const body = png.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const [depth, colour, , , interlace] = [body[8], body[9], body[10], body[11], body[12]];
      if (depth !== 8 || interlace !== 0 || (colour !== 2 && colour !== 6))
        throw new Error(`unsupported PNG: depth ${depth}, colour ${colour}, interlace ${interlace}`);
      channels = colour === 6 ? 4 : 3;
    } else if (type === 'IDAT') {
      data.push(body);
    }
    at += 12 + length;
  }
  const raw = zlib.inflateSync(Buffer.concat(data));
  const stride = width * channels;
  const pixels = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const left = x >= channels ? pixels[y * stride + x - channels] : 0;
      const up = y > 0 ? pixels[(y - 1) * stride + x] : 0;
      const upLeft = y > 0 && x >= channels ? pixels[(y - 1) * stride + x - channels] : 0;
      let value = line[x];
      if (filter === 1) value += left;
      else if (filter === 2) value += up;
      else if (filter === 3) value += (left + up) >> 1;
      else if (filter === 4) {
        const p = left + up - upLeft;
        const [pa, pb, pc] = [Math.abs(p - left), Math.abs(p - up), Math.abs(p - upLeft)];
        value += pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft;
      }
      pixels[y * stride + x] = value & 255;
    }
  }
  const rgba = Buffer.alloc(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    for (let c = 0; c < 3; c++) rgba[i * 4 + c] = pixels[i * channels + c];
    rgba[i * 4 + 3] = channels === 4 ? pixels[i * channels + 3] : 255;
  }
  return { width, height, rgba };
}

/** How many pixels have exactly the colour `#rrggbb`. */
export function countColour(picture: Picture, hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  let n = 0;
  for (let i = 0; i < picture.rgba.length; i += 4) if (picture.rgba[i] === r && picture.rgba[i + 1] === g && picture.rgba[i + 2] === b) n++;
  return n;
}

/** Rows (y) that contain at least one pixel of `#rrggbb`. */
export function rowsWithColour(picture: Picture, hex: string): number[] {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  const rows: number[] = [];
  for (let y = 0; y < picture.height; y++) {
    for (let x = 0; x < picture.width; x++) {
      const i = (y * picture.width + x) * 4;
      if (picture.rgba[i] === r && picture.rgba[i + 1] === g && picture.rgba[i + 2] === b) {
        rows.push(y);
        break;
      }
    }
  }
  return rows;
}
