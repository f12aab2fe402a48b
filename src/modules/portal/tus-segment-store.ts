import { createWriteStream } from 'node:fs';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DataStore, ERRORS, Upload } from '@tus/utils';
import { z } from 'zod';
import { MissingObjectError, type Storage } from '../files/storage.js';

/**
 * A tus datastore that keeps unfinished uploads in the shared object storage (S3), so that an upload
 * begun on one API process can be resumed on any other. Each PATCH's bytes become one object (a
 * segment) under `tus/<upload id>/`, and a small JSON object lists the segments; the offset is their
 * total. Segments need no multipart support from the server and no minimum part size (unlike S3
 * multipart parts), so any S3-compatible store works. When the last byte arrives, the segments are
 * streamed in order into one local file for inspection (what POST …/files does with its body).
 *
 * Writes to one upload are serialised by the tus locker (Redis across processes), which is what makes
 * the read-modify-write of the segment list safe. Needs a storage whose put overwrites (S3 does).
 * Abandoned uploads: give the bucket a lifecycle rule expiring `tus/` after the expiry period
 * (deleteExpired cannot list the bucket through the Storage interface); see docs/deploy.md.
 */
const Segment = z.object({ offset: z.number().int().min(0), size: z.number().int().min(1) });
const SegmentedUpload = z.object({
  id: z.string(),
  size: z.number().int().min(0),
  metadata: z.record(z.string(), z.string().nullable()).optional(),
  creation_date: z.string().optional(),
  segments: z.array(Segment),
});
type SegmentedUpload = z.infer<typeof SegmentedUpload>;

async function readAll(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const received = (info: SegmentedUpload) => info.segments.reduce((sum, s) => sum + s.size, 0);

export class SegmentStore extends DataStore {
  constructor(
    private readonly storage: Storage,
    private readonly expirationMs: number,
    private readonly prefix = 'tus',
  ) {
    super();
    this.extensions = ['creation', 'creation-with-upload', 'termination', 'expiration'];
  }

  private infoKey(id: string): string {
    return `${this.prefix}/${id}/info.json`;
  }

  private segmentKey(id: string, offset: number): string {
    // Zero-padded so a listing (lifecycle tools, an operator) shows segments in order.
    return `${this.prefix}/${id}/${offset.toString().padStart(15, '0')}.part`;
  }

  private async readInfo(id: string): Promise<SegmentedUpload> {
    let text: string;
    try {
      text = await readAll(await this.storage.get(this.infoKey(id)));
    } catch (error) {
      // @tus/server answers its own error objects as responses (its documented contract).
      // eslint-disable-next-line @typescript-eslint/only-throw-error
      if (error instanceof MissingObjectError) throw ERRORS.FILE_NOT_FOUND;
      throw error;
    }
    return SegmentedUpload.parse(JSON.parse(text));
  }

  private async writeInfo(info: SegmentedUpload): Promise<void> {
    await this.storage.put(this.infoKey(info.id), Readable.from([Buffer.from(JSON.stringify(info))]));
  }

  private toUpload(info: SegmentedUpload): Upload {
    return new Upload({
      id: info.id,
      size: info.size,
      offset: received(info),
      metadata: info.metadata,
      creation_date: info.creation_date,
      storage: { type: 'segments', path: `${this.prefix}/${info.id}` },
    });
  }

  override async create(upload: Upload): Promise<Upload> {
    if (upload.size === undefined) {
      throw new Error('SegmentStore: uploads of deferred length are not supported');
    }
    const creation = upload.creation_date ?? new Date().toISOString();
    await this.writeInfo({
      id: upload.id,
      size: upload.size,
      metadata: upload.metadata ?? undefined,
      creation_date: creation,
      segments: [],
    });
    upload.creation_date = creation;
    upload.storage = { type: 'segments', path: `${this.prefix}/${upload.id}` };
    return upload;
  }

  override async getUpload(id: string): Promise<Upload> {
    return this.toUpload(await this.readInfo(id));
  }

  /**
   * Stores this request's bytes as one segment. A request cut short still keeps what arrived (the
   * stream ends early); one that fails (storage error, cancelled for another request) keeps nothing,
   * and the client resumes from the offset before it.
   */
  override async write(stream: Readable, id: string, offset: number): Promise<number> {
    const info = await this.readInfo(id);
    if (received(info) !== offset) {
      // eslint-disable-next-line @typescript-eslint/only-throw-error
      throw ERRORS.INVALID_OFFSET;
    }
    let bytes = 0;
    const meter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        bytes += chunk.length;
        callback(null, chunk);
      },
    });
    const key = this.segmentKey(id, offset);
    // pipeline, not pipe: a failing request stream must fail the storage write too, not stall it.
    const [piped, stored] = await Promise.allSettled([pipeline(stream, meter), this.storage.put(key, meter)]);
    if (stored.status === 'rejected' || piped.status === 'rejected') {
      await this.storage.delete(key).catch(() => undefined);
      throw stored.status === 'rejected' ? stored.reason : (piped as PromiseRejectedResult).reason;
    }
    if (bytes === 0) {
      await this.storage.delete(key);
      return offset;
    }
    info.segments.push({ offset, size: bytes });
    await this.writeInfo(info);
    return offset + bytes;
  }

  override async remove(id: string): Promise<void> {
    const info = await this.readInfo(id);
    for (const segment of info.segments) await this.storage.delete(this.segmentKey(id, segment.offset));
    await this.storage.delete(this.infoKey(id));
  }

  override getExpiration(): number {
    return this.expirationMs;
  }

  override deleteExpired(): Promise<number> {
    return Promise.resolve(0);
  }

  /** Streams the finished upload's segments, in order, into one local file. */
  async assemble(id: string, path: string): Promise<void> {
    const info = await this.readInfo(id);
    const storage = this.storage;
    const keys = info.segments.map((segment) => this.segmentKey(id, segment.offset));
    async function* bytes() {
      for (const key of keys) yield* await storage.get(key);
    }
    await pipeline(Readable.from(bytes()), createWriteStream(path));
  }
}
