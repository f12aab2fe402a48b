import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** s3rver (a local S3-compatible server, npm) has no type declarations: the little used here. */
interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}
type S3rverConstructor = new (options: {
  address: string;
  port: number;
  silent: boolean;
  directory: string;
  configureBuckets: { name: string }[];
}) => S3rverInstance;
const S3rver = createRequire(import.meta.url)('s3rver') as S3rverConstructor;

export interface LocalS3 {
  endpoint: string;
  bucket: string;
  /** A STORAGE_URL that points the service at this bucket. */
  storageUrl: string;
  stop(): Promise<void>;
}

/** A real S3-compatible endpoint on loopback, with one bucket, in a temporary directory. */
export async function startLocalS3(bucket = 'intake-test'): Promise<LocalS3> {
  const dir = await mkdtemp(join(tmpdir(), 's3rver-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: dir,
    configureBuckets: [{ name: bucket }],
  });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    storageUrl: `s3://S3RVER:S3RVER@${bucket}?endpoint=${encodeURIComponent(endpoint)}&region=us-east-1&force_path_style=true`,
    async stop() {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
