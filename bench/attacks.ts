/**
 * How long /healthz waits while the server is under each input-exhaustion attack (see bench/README.md).
 * Each attack gets a fresh server in its own process (bench/attack-server.ts) on the checkout at
 * BENCH_ROOT (default: this one), so one attack's aftermath does not weigh on the next; /healthz is
 * asked every 20 ms during the attack, and the longest answer is the figure. The server's peak RSS
 * (VmHWM) is read from /proc. An attack or a /healthz answer is given up after CAP_MS (reported as ≥).
 *
 *   npx tsx bench/attacks.ts                      # this checkout
 *   BENCH_ROOT=/path/to/other/checkout npx tsx bench/attacks.ts
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { createDeflate } from 'node:zlib';

const CAP_MS = Number(process.env.BENCH_CAP_MS ?? 20_000);

interface Target {
  url: string;
  key: string;
  pid: number;
}

function crc32(bytes: Buffer): number {
  let crc = ~0;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE(crc32(body), 8 + data.length);
  return out;
}

/** A valid, fully decodable PNG of side × side transparent pixels: about 1 MB for 1 GiB decoded. */
async function pngBomb(side: number): Promise<Buffer> {
  const deflate = createDeflate({ level: 9 });
  const parts: Buffer[] = [];
  deflate.on('data', (part: Buffer) => parts.push(part));
  const done = new Promise((resolve) => deflate.on('end', resolve));
  const row = Buffer.alloc(1 + side * 4);
  for (let y = 0; y < side; y++) {
    if (!deflate.write(row)) await new Promise((resolve) => deflate.once('drain', resolve));
  }
  deflate.end();
  await done;
  const header = Buffer.alloc(13);
  header.writeUInt32BE(side, 0);
  header.writeUInt32BE(side, 4);
  header.set([8, 6, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', Buffer.concat(parts)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

function useBomb(levels: number): string {
  const defs = ['<rect id="u0" width="1" height="1"/>'];
  for (let i = 1; i <= levels; i++) {
    defs.push(`<g id="u${i}"><use href="#u${i - 1}"/><use href="#u${i - 1}" x="1"/></g>`);
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512"><defs>${defs.join('')}</defs><use href="#u${levels}"/></svg>`;
}

function anyOfChain(levels: number): Record<string, unknown> {
  const defs: Record<string, unknown> = { l0: { type: 'string', pattern: '^x$' } };
  for (let i = 1; i <= levels; i++) {
    defs[`l${i}`] = { anyOf: [{ $ref: `#/$defs/l${i - 1}` }, { $ref: `#/$defs/l${i - 1}` }] };
  }
  return { $defs: defs, $ref: `#/$defs/l${levels}` };
}

async function startTarget(): Promise<{ target: Target; stop: () => void }> {
  const child = spawn('npx', ['tsx', 'bench/attack-server.ts'], {
    env: { ...process.env },
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true,
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`attack server exited (${code})`)));
  });
  const target = JSON.parse(line) as Target;
  return { target, stop: () => child.pid !== undefined && process.kill(-child.pid, 'SIGKILL') };
}

async function peakRssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

async function api(target: Target, method: string, path: string, body?: unknown, signal?: AbortSignal) {
  const response = await fetch(target.url + path, {
    method,
    headers: { authorization: `Bearer ${target.key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  return {
    status: response.status,
    body: (await response.json().catch(() => ({}))) as Record<string, unknown>,
  };
}

async function intake(target: Target, items: unknown[]): Promise<string | undefined> {
  const created = await api(target, 'POST', '/v1/intakes', {
    project_name: 'Bench',
    client: { email: 'c@example.com', name: 'Dana' },
    items,
  });
  return created.status === 201 ? (created.body.intake_id as string) : undefined;
}

type Attack = ((target: Target, signal: AbortSignal) => Promise<string>) & {
  /** Run before /healthz is watched (what the attack needs but is not the attack). */
  prepare?: (target: Target) => Promise<void>;
};

async function structuredSubmit(target: Target, schema: unknown, value: unknown, signal: AbortSignal) {
  const id = await intake(target, [{ key: 'd', label: 'D', type: 'structured', schema }]);
  if (!id) return 'refused at definition (422)';
  const saved = await fetch(`${target.url}/portal/api/${id}/items/d`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ value }),
    signal,
  });
  if (saved.status !== 200) return `save ${saved.status}`;
  const submitted = await fetch(`${target.url}/portal/api/${id}/items/d/submit`, { method: 'POST', signal });
  return `submit ${submitted.status}`;
}

/**
 * The costliest check found within every limit at definition: 1,963 subschemas once expanded
 * (20 × 16 × 4 `format` branches) against 9,999 strings that match none, so every branch is
 * tried for each. On the event loop: about 1.5 s to compile and 55 s to check.
 */
function worstInLimitsSchema(): Record<string, unknown> {
  const formats = ['email', 'uri', 'date-time', 'ipv6'];
  const branches = <T>(n: number, make: (i: number) => T) => ({
    anyOf: Array.from({ length: n }, (_, i) => make(i)),
  });
  return {
    type: 'array',
    items: branches(20, () =>
      branches(16, () => branches(4, (k) => ({ type: 'string', format: formats[k] }))),
    ),
  };
}

/** The intake of the worst in-limits check, created (and its schema compiled) before measuring. */
let worstIntake: string | undefined;
const worstInLimits: Attack = Object.assign(
  async (target: Target, signal: AbortSignal) => {
    const submitted = await fetch(`${target.url}/portal/api/${worstIntake}/items/d/submit`, {
      method: 'POST',
      signal,
    });
    const body = (await submitted.json().catch(() => ({}))) as { message?: string };
    return `submit ${submitted.status}${body.message?.includes('too long') ? ' (too long to check)' : ''}`;
  },
  {
    prepare: async (target: Target) => {
      worstIntake = await intake(target, [
        { key: 'd', label: 'D', type: 'structured', schema: worstInLimitsSchema() },
      ]);
      if (!worstIntake) throw new Error('the worst in-limits schema was refused at definition');
      const saved = await fetch(`${target.url}/portal/api/${worstIntake}/items/d`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ value: Array.from({ length: 9_999 }, () => 'y@') }),
      });
      if (saved.status !== 200) throw new Error(`saving the value answered ${saved.status}`);
    },
  },
);

/** Made once, before any measuring (deflating 1 GiB takes seconds of the bench's own time). */
const BOMB = new Uint8Array(await pngBomb(16_000));

const ATTACKS: Record<string, Attack> = {
  'pattern ^(a+)+$, 29 a + !': (target, signal) =>
    structuredSubmit(
      target,
      { type: 'object', properties: { code: { type: 'string', pattern: '^(a+)+$' } } },
      { code: `${'a'.repeat(29)}!` },
      signal,
    ),
  'anyOf chain, 22 levels': (target, signal) => structuredSubmit(target, anyOfChain(22), ['y'], signal),
  'uniqueItems, 10,000 objects': (target, signal) =>
    structuredSubmit(
      target,
      { type: 'array', items: { type: 'object' }, uniqueItems: true },
      Array.from({ length: 10_000 }, (_, i) => ({ n: i })),
      signal,
    ),
  'worst check within the schema limits (1,963 subschemas × 9,999 strings)': worstInLimits,
  'PNG 16000×16000, 2 at once': async (target, signal) => {
    const id = await intake(target, [
      { key: 'f', label: 'F', type: 'file_list', constraints: { max_count: 10 } },
    ]);
    const answers = await Promise.all(
      [0, 1].map((i) =>
        fetch(`${target.url}/portal/api/${id}/items/f/files`, {
          method: 'POST',
          headers: { 'content-type': 'image/png', 'x-filename': `b${i}.png` },
          body: BOMB,
          signal,
        }).then((r) => r.status),
      ),
    );
    return `uploads ${answers.join(',')}`;
  },
  'SVG nested <use>, 3 previews': async (target, signal) => {
    const id = await intake(target, [{ key: 'logo', label: 'Logo', type: 'image' }]);
    const uploaded = await fetch(`${target.url}/portal/api/${id}/items/logo/files`, {
      method: 'POST',
      headers: { 'content-type': 'image/svg+xml', 'x-filename': 'b.svg' },
      body: useBomb(18),
      signal,
    });
    if (uploaded.status !== 201) return `upload ${uploaded.status}`;
    const { file_id: fileId } = (await uploaded.json()) as { file_id: string };
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const thumb = await fetch(`${target.url}/portal/api/${id}/items/logo/files/${fileId}/thumbnail`, {
        signal,
      });
      statuses.push(thumb.status);
    }
    return `previews ${statuses.join(',')}`;
  },
};

async function measure(name: string, attack: Attack): Promise<void> {
  const { target, stop } = await startTarget();
  try {
    // Warm-up: the first intake and the first portal answer load their modules.
    const warm = await intake(target, [
      { key: 'w', label: 'W', type: 'structured', schema: { type: 'object' } },
    ]);
    await fetch(`${target.url}/portal/api/${warm}/items/w`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ value: { a: 1 } }),
    });
    await fetch(`${target.url}/portal/api/${warm}/items/w/submit`, { method: 'POST' });
    await attack.prepare?.(target);
    let running = true;
    let worst = 0;
    const poller = (async () => {
      while (running) {
        const started = performance.now();
        await fetch(`${target.url}/healthz`, { signal: AbortSignal.timeout(CAP_MS) }).catch(() => undefined);
        worst = Math.max(worst, performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const started = performance.now();
    const outcome = await attack(target, AbortSignal.timeout(CAP_MS)).catch((error: unknown) =>
      error instanceof Error && error.name === 'TimeoutError' ? `gave up after ${CAP_MS} ms` : String(error),
    );
    const took = performance.now() - started;
    running = false;
    await poller;
    const capped = worst >= CAP_MS - 50 ? '≥ ' : '';
    console.log(
      `| ${name} | ${outcome} | ${Math.round(took)} | ${capped}${Math.round(worst)} | ${await peakRssMiB(target.pid)} |`,
    );
  } finally {
    stop();
  }
}

const only = process.env.BENCH_ATTACKS?.split(',');
console.log('| attack | outcome | attack ms | longest /healthz wait ms | peak RSS MiB |');
console.log('|---|---|---|---|---|');
for (const [name, attack] of Object.entries(ATTACKS)) {
  if (!only || only.some((o) => name.includes(o))) await measure(name, attack);
}
