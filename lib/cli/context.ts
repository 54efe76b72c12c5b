import * as path from 'path';
import { S3Client } from '@aws-sdk/client-s3';
import { Fleet, FleetConfigError, loadFleet } from '../fleet';
import { CliError } from './io';

/** Runs `load`, turning config problems (cells.config.ts, cells.accounts.json) into a CLI error (exit 1). */
export function withConfig<T>(load: () => T): T {
  try {
    return load();
  } catch (error) {
    if (error instanceof FleetConfigError) throw new CliError(error.message);
    throw error;
  }
}

/** Loads the fleet for a command; config problems are a CLI error (exit 1) listing them. */
export function fleetFrom(configPath: string): Fleet {
  return withConfig(() => loadFleet(path.resolve(configPath)));
}

export interface S3Options {
  readonly forcePathStyle?: boolean;
  readonly region?: string;
}

/**
 * An S3 client from the standard SDK configuration (credential chain, AWS_REGION,
 * AWS_ENDPOINT_URL_S3); `fallbackRegion` only when nothing else names one.
 */
export function s3Client(options: S3Options, fallbackRegion: string): S3Client {
  const region = options.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? fallbackRegion;
  return new S3Client({ region, forcePathStyle: options.forcePathStyle ?? false });
}
