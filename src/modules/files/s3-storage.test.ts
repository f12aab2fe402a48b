import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../config.js';
import { parseS3Url } from './s3-storage.js';

describe('parseS3Url', () => {
  it('reads bucket, endpoint, region, path style and credentials from the URL', () => {
    expect(
      parseS3Url(
        's3://AKIA123:se%2Fcr%2Bet@my-bucket?endpoint=http://127.0.0.1:9000&region=eu-west-1&force_path_style=true',
        {},
      ),
    ).toEqual({
      bucket: 'my-bucket',
      region: 'eu-west-1',
      endpoint: 'http://127.0.0.1:9000',
      forcePathStyle: true,
      credentials: { accessKeyId: 'AKIA123', secretAccessKey: 'se/cr+et' },
    });
  });

  it('falls back to AWS_* variables, then to the SDK default chain; AWS itself by default', () => {
    const env = {
      AWS_ACCESS_KEY_ID: 'AK',
      AWS_SECRET_ACCESS_KEY: 'SK',
      AWS_SESSION_TOKEN: 'TOK',
      AWS_REGION: 'ap-south-1',
    };
    expect(parseS3Url('s3://files.example.com', env)).toEqual({
      bucket: 'files.example.com',
      region: 'ap-south-1',
      endpoint: undefined,
      forcePathStyle: false,
      credentials: { accessKeyId: 'AK', secretAccessKey: 'SK', sessionToken: 'TOK' },
    });
    expect(parseS3Url('s3://bucket', {})).toMatchObject({ region: 'us-east-1', credentials: undefined });
  });

  it('uses path-style addressing with a custom endpoint unless told otherwise', () => {
    expect(parseS3Url('s3://bkt?endpoint=https://s3.example.net', {}).forcePathStyle).toBe(true);
    expect(
      parseS3Url('s3://bkt?endpoint=https://s3.example.net&force_path_style=false', {}).forcePathStyle,
    ).toBe(false);
  });

  it('refuses what it cannot use, with messages that never repeat the secret', () => {
    const bad = [
      ['http://bucket', /must start with s3:\/\//],
      ['s3://', /must name a bucket/],
      ['s3://bucket/prefix', /prefixes/],
      ['s3://bucket?endpoint=http://x&regoin=eu', /unknown parameter regoin/],
      ['s3://bucket?endpoint=ftp://x', /endpoint must be an http/],
      ['s3://bucket?force_path_style=maybe', /force_path_style must be true or false/],
      ['s3://KEYONLY@bucket', /both the access key and the secret/],
      ['s3://K:SECRETVALUE@bucket:9000', /endpoint=http/],
    ] as const;
    for (const [url, message] of bad) {
      let error: unknown;
      try {
        parseS3Url(url, {});
      } catch (e) {
        error = e;
      }
      expect(error, url).toBeInstanceOf(ConfigError);
      expect((error as Error).message, url).toMatch(message);
      expect((error as Error).message).not.toContain('SECRETVALUE');
    }
  });
});
