import * as path from 'path';
import { S3Client } from '@aws-sdk/client-s3';
import { Fleet, FleetConfigError, loadFleet } from '../fleet';
import { CliError } from './io';

/** Loads the fleet for a command, turning config problems into a CLI error (exit 1). */
export function fleetFrom(configPath: string): Fleet {
  try {
    return loadFleet(path.resolve(configPath));
  } catch (error) {
    if (error instanceof FleetConfigError) throw new CliError(error.message);
    if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') {
      throw new CliError(`${configPath}: not found; run from the project root or pass --config FILE`);
    }
    throw error;
  }
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
