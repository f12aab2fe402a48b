import { createReadStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { ConfigError } from '../../config.js';
import { attachmentDisposition } from './signed-url.js';
import { assertSafeKey, MissingObjectError, type Storage, type StoredObject } from './storage.js';

export interface S3StorageOptions {
  bucket: string;
  region: string;
  /** An S3-compatible server (MinIO, R2, Ceph…); absent for AWS itself. */
  endpoint: string | undefined;
  forcePathStyle: boolean;
  /** Absent: the AWS SDK's default chain (shared config files, instance or task roles). */
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | undefined;
}

const URL_PARAMETERS = ['endpoint', 'region', 'force_path_style'];
const BUCKET = /^[A-Za-z0-9][A-Za-z0-9._-]{1,254}$/;

function flag(name: string, value: string): boolean {
  if (['true', '1', 'on'].includes(value)) return true;
  if (['false', '0', 'off'].includes(value)) return false;
  throw new ConfigError(`STORAGE_URL: ${name} must be true or false, not "${value}".`);
}

/**
 * `s3://[KEY:SECRET@]bucket?endpoint=http://host:port&region=us-east-1&force_path_style=true`.
 * Credentials come from the URL's user info (percent-encoded), else AWS_ACCESS_KEY_ID /
 * AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), else the SDK's default chain. The region defaults
 * to AWS_REGION or us-east-1; path-style addressing defaults to on with a custom endpoint (what
 * most S3-compatible servers need) and off for AWS. Messages never repeat the URL (it may hold a secret).
 */
export function parseS3Url(storageUrl: string, env: NodeJS.ProcessEnv = process.env): S3StorageOptions {
  let url: URL;
  try {
    url = new URL(storageUrl);
  } catch {
    throw new ConfigError('STORAGE_URL is not a valid URL; expected s3://bucket?endpoint=…&region=….');
  }
  if (url.protocol !== 's3:') {
    throw new ConfigError(`STORAGE_URL must start with s3://, not ${url.protocol}//.`);
  }
  const bucket = decodeURIComponent(url.hostname);
  if (!BUCKET.test(bucket)) {
    throw new ConfigError('STORAGE_URL must name a bucket: s3://bucket-name?…');
  }
  if (url.pathname !== '' && url.pathname !== '/') {
    throw new ConfigError('STORAGE_URL: key prefixes (a path after the bucket) are not supported.');
  }
  if (url.port !== '') {
    throw new ConfigError(
      'STORAGE_URL: put the server address in ?endpoint=http://host:port, not after the bucket.',
    );
  }
  const unknown = [...url.searchParams.keys()].filter((key) => !URL_PARAMETERS.includes(key));
  if (unknown.length > 0) {
    throw new ConfigError(
      `STORAGE_URL: unknown parameter ${unknown.join(', ')}; use ${URL_PARAMETERS.join(', ')}.`,
    );
  }
  const endpoint = url.searchParams.get('endpoint') ?? undefined;
  if (endpoint !== undefined && !/^https?:\/\/[^/?#]+\/?$/.test(endpoint)) {
    throw new ConfigError('STORAGE_URL: endpoint must be an http(s) address such as http://127.0.0.1:9000.');
  }
  const pathStyle = url.searchParams.get('force_path_style');

  let credentials: S3StorageOptions['credentials'];
  if (url.username !== '' || url.password !== '') {
    if (url.username === '' || url.password === '') {
      throw new ConfigError('STORAGE_URL: give both the access key and the secret (s3://KEY:SECRET@bucket).');
    }
    credentials = {
      accessKeyId: decodeURIComponent(url.username),
      secretAccessKey: decodeURIComponent(url.password),
    };
  } else if (env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY) {
    credentials = {
      accessKeyId: env.AWS_ACCESS_KEY_ID,
      secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
      ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
    };
  }
  return {
    bucket,
    region: url.searchParams.get('region') ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
    endpoint: endpoint?.replace(/\/$/, ''),
    forcePathStyle: pathStyle === null ? endpoint !== undefined : flag('force_path_style', pathStyle),
    credentials,
  };
}

/** S3's smallest part: memory per upload stays at queueSize × 5 MiB whatever the file size. */
const PART_SIZE = 5 * 1024 * 1024;

function isMissing(error: unknown): boolean {
  return (
    error instanceof S3ServiceException &&
    (error.name === 'NoSuchKey' || error.name === 'NotFound' || error.$metadata.httpStatusCode === 404)
  );
}

/** Files in an S3 bucket (AWS or any S3-compatible server), streamed both ways. */
export class S3Storage implements Storage {
  readonly kind = 's3';
  private readonly client: S3Client;
  private readonly bucket: string;

  constructor(options: S3StorageOptions) {
    this.bucket = options.bucket;
    this.client = new S3Client({
      region: options.region,
      forcePathStyle: options.forcePathStyle,
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      ...(options.credentials ? { credentials: options.credentials } : {}),
      // Flexible checksums (aws-chunked bodies with trailers) are AWS's default since 2025, but
      // many S3-compatible servers reject them: with a custom endpoint, only where S3 requires one.
      ...(options.endpoint
        ? { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' }
        : {}),
      requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
    });
  }

  static fromUrl(storageUrl: string, env: NodeJS.ProcessEnv = process.env): S3Storage {
    return new S3Storage(parseS3Url(storageUrl, env));
  }

  /** A multipart upload from the stream: parts are sent as they fill, never the whole body in memory. */
  async put(key: string, body: Readable): Promise<{ bytes: number }> {
    assertSafeKey(key);
    let bytes = 0;
    const meter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        bytes += chunk.length;
        callback(null, chunk);
      },
    });
    const piping = pipeline(body, meter);
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: key, Body: meter },
      partSize: PART_SIZE,
      queueSize: 4,
    });
    const uploading = upload.done().catch((error: unknown) => {
      // Unblock the pipeline, which would otherwise wait forever for a reader.
      meter.destroy(error instanceof Error ? error : new Error('S3 upload failed'));
      throw error;
    });
    const [piped, uploaded] = await Promise.allSettled([piping, uploading]);
    if (uploaded.status === 'rejected') throw uploaded.reason;
    if (piped.status === 'rejected') throw piped.reason;
    return { bytes };
  }

  async putFile(key: string, path: string): Promise<{ bytes: number }> {
    assertSafeKey(key);
    const { size } = await stat(path);
    await new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: key, Body: createReadStream(path), ContentLength: size },
      partSize: PART_SIZE,
      queueSize: 4,
    }).done();
    await rm(path, { force: true });
    return { bytes: size };
  }

  async get(key: string): Promise<Readable> {
    assertSafeKey(key);
    try {
      const response = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      if (!(response.Body instanceof Readable)) throw new Error('S3 answered without a body stream');
      return response.Body;
    } catch (error) {
      if (isMissing(error)) throw new MissingObjectError(key);
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    assertSafeKey(key);
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  async *list(): AsyncIterable<StoredObject> {
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, ContinuationToken: token }),
      );
      for (const object of page.Contents ?? []) {
        if (object.Key && object.LastModified) yield { key: object.Key, modifiedAt: object.LastModified };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async check(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
  }

  /** A GET URL signed by the bucket's credentials; the download is an attachment with this name and type. */
  presignedUrl(
    key: string,
    expiresInSeconds: number,
    downloadName: string,
    contentType: string,
  ): Promise<string> {
    assertSafeKey(key);
    return getSignedUrl(
      this.client,
      new GetObjectCommand({
        Bucket: this.bucket,
        Key: key,
        ResponseContentDisposition: attachmentDisposition(downloadName),
        ResponseContentType: contentType,
      }),
      { expiresIn: expiresInSeconds },
    );
  }

  /** Closes idle connections (tests, shutdown). */
  close(): void {
    this.client.destroy();
  }
}
