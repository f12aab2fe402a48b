import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeNewFile } from './new-file.js';

describe('writeNewFile', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'new-file-'));
  });
  afterEach(async () => rm(dir, { recursive: true, force: true }));

  it('writes the body to a new file', async () => {
    await writeNewFile(Readable.from([Buffer.from('one '), Buffer.from('two')]), join(dir, 'a'));
    expect(await readFile(join(dir, 'a'), 'utf8')).toBe('one two');
  });

  it('leaves a file that was already there as it was, and says so (EEXIST)', async () => {
    await writeFile(join(dir, 'kept'), 'the first');
    const error = await writeNewFile(Readable.from([Buffer.from('the second')]), join(dir, 'kept')).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'EEXIST' });
    expect(await readFile(join(dir, 'kept'), 'utf8')).toBe('the first');
  });

  it('removes the partial file of a body that fails, before or after the file has opened', async () => {
    // Sends `chunks` chunks of 1 KiB, then fails as a client that goes away does.
    const failing = (chunks: number) => {
      let sent = 0;
      return new Readable({
        read() {
          if (sent++ < chunks) this.push(Buffer.alloc(1024, 1));
          else this.destroy(new Error('the client went away'));
        },
      });
    };
    for (let write = 0; write < 200; write++) {
      // Fails at once (the file still opening) in three of four, after some bytes in the fourth.
      const error = await writeNewFile(failing(write % 4 === 3 ? 64 : 0), join(dir, `f${write}`)).catch(
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ message: 'the client went away' });
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await readdir(dir)).toEqual([]);
  });
});
